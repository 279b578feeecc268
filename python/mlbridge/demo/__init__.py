"""``mlbridge demo``: bundled C programs compiled by clang-19 -Oz while a
hand-written Python policy (:mod:`mlbridge.demo.policy`) makes every inlining
decision over LLVM 19's interactive pipes."""
