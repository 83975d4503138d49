"""Loss: softMaxCrossEntropy of [N, C] logits against oneHot labels, mean over the batch."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
logits = g.placeholder([2, 3], mg.float32, name="logits")
labels = g.placeholder([2], mg.int32, name="labels")
loss = g.softMaxCrossEntropy(logits, g.oneHot(labels, 3), -1,
                             reductionType=mg.LossReductionType.mean, name="loss")
out = g.run(feeds={logits: np.array([[2, 0, 0], [0, 0, 5]], np.float32),
                   labels: np.array([0, 2], np.int32)}, targetTensors=[loss])
print("loss", float(out[loss].numpy().reshape(-1)[0]))
