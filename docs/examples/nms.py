"""Non-maximum suppression: keep the best of 3 boxes [1, 3, 4] where two overlap (IoU > 0.5)."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
boxes = g.placeholder([1, 3, 4], mg.float32, name="boxes")  # [N, B, 4]: (y0, x0, y1, x1)
scores = g.placeholder([1, 3, 1], mg.float32, name="scores")        # [N, B, K] one class
keep = g.nonMaximumSuppression(boxes, scores, iouThreshold=0.5)     # int32 [1, 3], -1 padded
out = g.run(feeds={boxes: np.array([[[0, 0, 2, 2], [0, 0.1, 2, 2.1], [3, 3, 4, 4]]], np.float32),
                   scores: np.array([[[0.6], [0.9], [0.3]]], np.float32)},
            targetTensors=[keep])
print("kept box indices:", out[keep].numpy().tolist())              # box 0 overlaps box 1
