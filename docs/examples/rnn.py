"""LSTM: a time-major [T, N, I] sequence through one LSTM layer (hidden size H)."""
import numpy as np

import mpsgraph as mg

T, N, I, H = 5, 2, 3, 4
g = mg.Graph()
x = g.placeholder([T, N, I], mg.float32, name="x")
r = g.placeholder([4 * H, H], mg.float32, name="recurrentWeight")
w = g.placeholder([4 * H, I], mg.float32, name="inputWeight")
(state,) = g.LSTM(x, r, inputWeight=w, descriptor=mg.LSTMDescriptor())  # [T, N, H]
rng = np.random.default_rng(0)
out = g.run(feeds={x: rng.standard_normal((T, N, I), dtype=np.float32),
                   r: 0.1 * rng.standard_normal((4 * H, H), dtype=np.float32),
                   w: 0.1 * rng.standard_normal((4 * H, I), dtype=np.float32)},
            targetTensors=[state])
print(out[state].shape)
