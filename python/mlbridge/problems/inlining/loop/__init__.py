"""The train-to-deploy loop on a real compiler (``mlbridge train inlining --method loop``).

Collect (features, LLVM's decision) from stock clang-19 through LLVM's
interactive mode; train an imitation policy (numpy); export it to ONNX;
compile it with mlbridge-aot; deploy it inside the same unmodified clang-19
through the mlbridge-inline-advisor plugin; measure decision agreement,
``.text`` size and compile time on held-out programs; then try evolution
strategies to beat ``-Oz`` on size. See :func:`mlbridge.problems.inlining.loop.run.run_loop`.
"""
