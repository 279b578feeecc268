"""Export PyTorch policies to ONNX and TorchScript, with torch's own outputs
as the reference.

    python3 tools/export_torch_test_models.py OUT_DIR

Runs under any Python with torch (e.g. Debian's /usr/bin/python3 with
python3-torch; torch stays an optional dependency of mlbridge). Writes, for
each policy NAME: NAME.onnx (graph inputs/outputs named "x" and "y"),
NAME.pt (the same module, scripted) and NAME.cases.bin: 200 random float32
inputs followed by torch's float32 outputs for them. Policies: torch_mlp
(64->64->1, ReLU) and torch_policy (300->256->256->16, Tanh then ReLU,
softmax head). Besides, TorchScript models of the TorchModelRunner tests'
other cases (the shapes of what forward() takes and returns, and a model
that fails on some inputs): see ``SHAPES``.
"""

import sys
from pathlib import Path

import torch

CASES = 200


class Policy(torch.nn.Module):
    def __init__(self, sizes, softmax):
        super().__init__()
        layers = []
        for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            layers.append(torch.nn.Linear(n_in, n_out))
            if i < len(sizes) - 2:
                layers.append(torch.nn.Tanh() if i == 0 else torch.nn.ReLU())
        self.body = torch.nn.Sequential(*layers)
        self.softmax = softmax

    def forward(self, x):
        y = self.body(x)
        return torch.softmax(y, dim=-1) if self.softmax else y


def export(out: Path, name: str, sizes, softmax: bool, seed: int) -> None:
    torch.manual_seed(seed)
    model = Policy(sizes, softmax).eval()
    example = torch.zeros(1, sizes[0])
    torch.onnx.export(
        model,
        (example,),
        str(out / f"{name}.onnx"),
        input_names=["x"],
        output_names=["y"],
        opset_version=13,
    )
    torch.jit.script(model).save(str(out / f"{name}.pt"))
    xs = torch.randn(CASES, sizes[0])
    with torch.no_grad():
        ys = torch.cat([model(x.reshape(1, -1)) for x in xs])
    (out / f"{name}.cases.bin").write_bytes(xs.numpy().tobytes() + ys.numpy().tobytes())


class EmbedPolicy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(12, 6)
        self.hidden = torch.nn.Linear(22, 32)
        self.head = torch.nn.Linear(32, 8)

    def forward(self, x, opcode):
        h = torch.cat([x, self.embed(opcode)], dim=-1)
        return torch.log_softmax(self.head(torch.relu(self.hidden(h))), dim=-1)


def export_embed(out: Path) -> None:
    torch.manual_seed(2)
    model = EmbedPolicy().eval()
    example = (torch.zeros(1, 16), torch.zeros(1, dtype=torch.long))
    torch.onnx.export(
        model,
        example,
        str(out / "torch_embed_policy.onnx"),
        input_names=["x", "opcode"],
        output_names=["y"],
        opset_version=13,
        dynamic_axes={"x": {0: "batch"}, "opcode": {0: "batch"}, "y": {0: "batch"}},
    )
    torch.jit.script(model).save(str(out / "torch_embed_policy.pt"))
    xs = torch.randn(CASES, 16)
    ops = torch.randint(0, 12, (CASES,))
    with torch.no_grad():
        ys = torch.cat([model(x.reshape(1, -1), o.reshape(1)) for x, o in zip(xs, ops)])
    (out / "torch_embed_policy.cases.bin").write_bytes(
        xs.numpy().tobytes() + ops.numpy().tobytes() + ys.numpy().tobytes()
    )


class Tuple2(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1), (x * 2).to(torch.int64)


class Named(torch.nn.Module):
    def forward(self, x):
        return {"twice": x * 2, "best": torch.argmax(x, dim=-1)}


class FailsOnNegative(torch.nn.Module):
    def forward(self, x):
        if bool((x < 0).any()):
            raise RuntimeError("negative feature")
        return x.sum(dim=-1)


class TakesInt(torch.nn.Module):
    def forward(self, x, k: int):
        return x * k


class ReturnsInt(torch.nn.Module):
    def forward(self, x) -> int:
        return 3


#: TorchScript models of the runner's other cases, each with forward(x)
#: for x of shape [1, 4] unless said otherwise.
SHAPES = {
    "torch_tuple": Tuple2(),  # (sum: float [1], twice as int64 [1, 4])
    "torch_dict": Named(),  # {"twice": float [1, 4], "best": int64 [1]}
    "torch_fails": FailsOnNegative(),  # raises when a feature is negative
    "torch_int_arg": TakesInt(),  # forward(x, k: int): not all tensors
    "torch_returns_int": ReturnsInt(),  # an int, not tensors
}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    export(out, "torch_mlp", [64, 64, 1], softmax=False, seed=0)
    export(out, "torch_policy", [300, 256, 256, 16], softmax=True, seed=1)
    export_embed(out)
    for name, module in SHAPES.items():
        torch.jit.script(module).save(str(out / f"{name}.pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
