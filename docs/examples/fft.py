"""FFT: fastFourierTransform of [4]; realToHermiteanFFT then HermiteanToRealFFT of [2, 6]."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([4], mg.float32, name="x")
X = g.fastFourierTransform(x, axes=[0])                             # complexFloat32 [4]
r = g.placeholder([2, 6], mg.float32, name="r")
R = g.realToHermiteanFFT(r, axes=[1])                               # complexFloat32 [2, 4]
back = g.HermiteanToRealFFT(R, axes=[1], descriptor=mg.FFTDescriptor(
    inverse=True, scalingMode=mg.FFTScalingMode.size))              # float32 [2, 6]
rv = np.arange(12, dtype=np.float32).reshape(2, 6)
out = g.run(feeds={x: np.array([1, 2, 3, 4], np.float32), r: rv}, targetTensors=[X, R, back])
print("FFT([1, 2, 3, 4]) =", [complex(round(z.real, 4), round(z.imag, 4)) for z in out[X].numpy()])
print("rfft", out[R].shape, "-> irfft", out[back].shape, "round trip exact:",
      np.allclose(out[back].numpy(), rv, atol=1e-5))
