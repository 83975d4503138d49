"""A Swift MPSGraph training program, translated line by line (Swift in the comments).

Fits y = 3x - 1 with one weight and one bias: a forward graph, a loss, gradients from
`gradientForPrimaryTensor` (Swift `gradients(of:with:)`), and `applyStochasticGradientDescent`
run as target operations. Run: python examples/swift_translation.py
"""

import numpy as np

import mpsgraph as mg

# let graph = MPSGraph()
graph = mg.Graph()
# let x = graph.placeholder(shape: [8, 1], dataType: .float32, name: "x")
x = graph.placeholder(shape=[8, 1], dataType=mg.float32, name="x")
# let y = graph.placeholder(shape: [8, 1], name: "y")            // float32 by default
y = graph.placeholder(shape=[8, 1], name="y")
# let w = graph.variable(with: Data(bytes: [Float(0)], count: 4), shape: [1, 1],
#                        dataType: .float32, name: "w")
w = graph.variable(np.zeros(1, np.float32).tobytes(), shape=[1, 1], dataType=mg.float32,
                   name="w")
# let b = graph.variable(with: ..., shape: [1], dataType: .float32, name: "b")
b = graph.variable(np.zeros(1, np.float32).tobytes(), shape=[1], dataType=mg.float32, name="b")
# let pred = graph.addition(graph.matrixMultiplication(primary: x, secondary: w, name: nil),
#                           b, name: nil)
pred = graph.addition(graph.matrixMultiplication(x, w), b)
# let err = graph.subtraction(pred, y, name: nil)
err = graph.subtraction(pred, y)
# let loss = graph.mean(of: graph.square(with: err, name: nil), axes: [0, 1], name: "loss")
loss = graph.mean(graph.square(err), axes=[0, 1], name="loss")
# let grads = graph.gradients(of: loss, with: [w, b], name: nil)
grads = graph.gradients(loss, [w, b])
# let lr = graph.constant(0.1, dataType: .float32)
lr = graph.constant(0.1, dataType=mg.float32)
# let updates = [w, b].map { graph.applyStochasticGradientDescent(learningRate: lr,
#                                 variable: $0, gradient: grads[$0]!, name: nil) }
updates = [graph.applyStochasticGradientDescent(lr, v, grads[v]) for v in (w, b)]

rng = np.random.default_rng(0)
for step in range(200):
    xs = rng.uniform(-1, 1, (8, 1)).astype(np.float32)
    # let out = graph.run(feeds: [x: xData, y: yData], targetTensors: [loss],
    #                     targetOperations: updates)
    out = graph.run(feeds={x: xs, y: 3 * xs - 1}, targetTensors=[loss], targetOperations=updates)
    if step % 50 == 0:
        print(f"step {step:3d}: loss {out[loss].numpy().item():.5f}")

final = graph.run(feeds={}, targetTensors=[w, b])
print(f"w = {final[w].numpy().item():.3f} (want 3), b = {final[b].numpy().item():.3f} (want -1)")
