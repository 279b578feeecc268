"""Training compiler policies with a maintained RL library (Stable-Baselines3's
PPO) on the environments of :mod:`mlbridge.gym`, then exporting them to ONNX
for the compiler-side runners (ONNX Runtime in-process, or AOT-compiled C++).

- :mod:`~mlbridge.train.features`: what a policy sees (kept features, signed log);
- :mod:`~mlbridge.train.export`: a trained SB3 policy as an ONNX model with
  the compiler's own input names;
"""
