#!/usr/bin/env python3
"""Write the golden vectors of docs/protocol.md into tests/golden/.

Run as ``python tools/make_golden_vectors.py [--out DIR]``. The output is
deterministic; tests/golden/README.md documents every file. Both test suites
(Python and C++) check their encoders and decoders against these bytes.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from mlbridge.codecs import get_codec  # noqa: E402
from mlbridge.codecs.protobuf_codec import load_tensor_pb2  # noqa: E402
from mlbridge.tensor_spec import TensorSpec, type_name_of  # noqa: E402

F32, F64 = np.float32, np.float64

# A case: (name, context, observation, [(tensor name, array)], reward or None).
Case = Tuple[str, str, int, List[Tuple[str, np.ndarray]], Optional[float]]

INLINER_FEATURES = [
    "callee_basic_block_count",
    "callsite_height",
    "node_count",
    "nr_ctant_params",
    "cost_estimate",
    "edge_count",
    "caller_users",
    "caller_conditionally_executed_blocks",
    "caller_basic_block_count",
    "callee_conditionally_executed_blocks",
    "callee_users",
    "sroa_savings",
    "sroa_losses",
    "load_elimination",
    "call_penalty",
    "call_argument_setup",
    "load_relative_intrinsic",
    "lowered_call_arg_setup",
    "indirect_call_penalty",
    "jump_table_penalty",
    "case_cluster_penalty",
    "switch_penalty",
    "unsimplified_common_instructions",
    "num_loops",
    "dead_blocks",
    "simplified_instructions",
    "constant_args",
    "constant_offset_ptr_args",
    "callsite_cost",
    "cold_cc_penalty",
    "last_call_to_static_bonus",
    "is_multiple_blocks",
    "nested_inlines",
    "nested_inline_cost_estimate",
    "threshold",
    "is_callee_avail_external",
    "is_caller_avail_external",
    "inlining_default",
]


def _int_limits(dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    if info.min < 0:
        values = [info.min, info.min + 1, -1, 0, 1, 10, info.max - 1, info.max]
    else:
        values = [0, 1, 2, 10, 0x7F, info.max // 2 + 1, info.max - 1, info.max]
    return np.array(values, dtype=dtype)


def cases() -> List[Case]:
    """Every golden case, in file order."""
    nan32 = np.array([0x7FC00000], np.uint32).view(F32)[0]
    float32_edges = np.array(
        [
            0.0,
            -0.0,
            nan32,
            np.inf,
            -np.inf,
            np.array([1], np.uint32).view(F32)[0],  # smallest denormal 1e-45
            np.array([0x007FFFFF], np.uint32).view(F32)[0],  # largest denormal
            np.finfo(F32).tiny,
            0.1,
            1e-7,
            1e-5,
            3.4028235e38,
            -3.4028235e38,
            123456789.0,
            16777216.0,
            1e6,
            1e5,
            10000.0,
            1e20,
            1.5,
            -2.0,
            0.3,
            2.5e-10,
            1.0 / 3.0,
        ],
        dtype=F32,
    )
    float64_edges = np.array(
        [
            0.0,
            -0.0,
            np.nan,
            np.inf,
            -np.inf,
            5e-324,
            2.2250738585072014e-308,
            1.7976931348623157e308,
            -1.7976931348623157e308,
            0.1,
            1e-7,
            1e-5,
            1e15,
            1e16,
            123456789.0,
            2.0**60,
            1e22,
            1e23,
            -1.5,
            0.3,
            1.0 / 3.0,
            3.4028234663852886e38,
            100000.0,
            9007199254740993.0,
            1e-300,
            6.02214076e23,
        ],
        dtype=F64,
    )
    eviction = [
        (name, (np.arange(33, dtype=np.int64).reshape(1, 33) * (i + 1)) % (7 + i))
        for i, name in enumerate(["mask", "is_free", "nr_urgent", "nr_defs_and_uses"])
    ]
    eviction[0] = ("mask", (np.arange(33).reshape(1, 33) % 3 != 0).astype(np.int64))
    return [
        ("float32_edges", "float_fn", 0, [("values", float32_edges)], None),
        ("float64_edges", "double_fn", 1, [("values", float64_edges)], None),
        (
            "int_limits",
            "ints",
            2,
            [
                (f"{np.dtype(dt).name}_values", _int_limits(dt))
                for dt in (
                    np.int8,
                    np.uint8,
                    np.int16,
                    np.uint16,
                    np.int32,
                    np.uint32,
                    np.int64,
                    np.uint64,
                )
            ],
            None,
        ),
        (
            "scalars",
            "scalars",
            3,
            [
                ("f", np.array(-0.75, F32)),
                ("d", np.array(1e-7, F64)),
                ("i64", np.array(-42, np.int64)),
                ("flag", np.array(1, np.uint8)),
            ],
            None,
        ),
        (
            "nd_shape",
            "tensor3d",
            4,
            [
                ("cube", np.arange(-12, 12, dtype=np.int32).reshape(2, 3, 4)),
                ("matrix", np.array([[0.5, -1.25], [1e10, 7.0]], F32)),
            ],
            None,
        ),
        (
            "zero_sized",
            "empty",
            5,
            [
                ("nothing", np.zeros((0,), F32)),
                ("none2d", np.zeros((2, 0), np.int64)),
                ("one", np.array([7], np.int64)),
            ],
            None,
        ),
        (
            "mixed_newlines",
            "_Z3fooi",
            6,
            [
                ("bytes", np.array([10, 10, 0, 10, 255, 13], np.uint8)),
                ("word", np.array([0x0A0A0A0A], np.int32)),
                ("halves", np.array([0x0A0A, 0xFFFF], np.uint16)),
                ("flags", np.array([0, 1, 1, 0], np.uint8)),
                ("score", np.array([2.5, -0.0], F64)),
            ],
            -0.5,
        ),
        (
            "mlgo_inliner_like",
            "main",
            17,
            [
                (name, np.array([(i * 37) % 101 - (5 if i % 4 == 0 else 0)], np.int64))
                for i, name in enumerate(INLINER_FEATURES)
            ],
            12.0,
        ),
        (
            "eviction_like",
            "regalloc_fn",
            123456789012,
            eviction + [("progress", np.array([0.6171875], F32))],
            1.0e-3,
        ),
    ]


def case_specs(tensors: List[Tuple[str, np.ndarray]]) -> List[TensorSpec]:
    return [TensorSpec(name, type_name_of(arr.dtype), arr.shape) for name, arr in tensors]


def protobuf_message(
    observation: int, specs: List[TensorSpec], tensors: List[Tuple[str, np.ndarray]]
) -> bytes:
    """Serialise with the official generated class, independently of the codec."""
    pb2 = load_tensor_pb2()
    message = pb2.TensorMessage(observation=observation)
    for spec, (_, arr) in zip(specs, tensors):
        message.tensors.add(
            name=spec.name,
            dtype=spec.proto_dtype,
            shape=spec.shape,
            data=arr.astype(spec.dtype).tobytes(),
        )
    return message.SerializeToString()


def training_log(
    context: str, specs: List[TensorSpec], raw: bytes, reward: Optional[bytes]
) -> bytes:
    """The log bytes, built by hand from the format (independently of the writer)."""
    header = '{"features":[' + ",".join(s.to_json_str() for s in specs) + "]"
    if reward is not None:
        header += ',"score":' + TensorSpec("reward", "float", (1,)).to_json_str()
    out = (header + "}\n").encode()
    out += json.dumps({"context": context}, separators=(",", ":")).encode() + b"\n"
    out += b'{"observation":0}\n' + raw + b"\n"
    if reward is not None:
        out += b'{"outcome":0}\n' + reward + b"\n"
    return out


def frames() -> Tuple[bytes, List[Dict[str, Any]]]:
    """A few extended-mode frames and their description."""
    specs = [TensorSpec("x", "int64_t", (2,))]
    items = [
        (1, "CONTEXT", b"fn"),
        (
            2,
            "OBSERVATION",
            get_codec("json").encode_request(0, specs, {"x": np.array([1, -1], np.int64)}),
        ),
        (
            3,
            "RESULT",
            get_codec("json").encode_reply(
                [TensorSpec("y", "float", (1,))], {"y": np.array([0.5], F32)}
            ),
        ),
        (4, "ERROR", b"boom"),
        (2, "OBSERVATION", b""),
    ]
    data = b"".join(struct.pack("<II", len(p), k) + p for k, _, p in items)
    described = [{"kind": k, "kind_name": n, "payload_hex": p.hex()} for k, n, p in items]
    return data, described


def write(out: Path) -> List[Path]:
    """Write every golden file into ``out``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    json_codec = get_codec("json")
    written: Dict[Path, bytes] = {}
    described = []
    for name, context, observation, tensors, reward in cases():
        specs = case_specs(tensors)
        raws = [arr.astype(spec.dtype).tobytes() for spec, (_, arr) in zip(specs, tensors)]
        values = {spec.name: arr for spec, (_, arr) in zip(specs, tensors)}
        reward_bytes = None if reward is None else np.array([reward], F32).tobytes()
        entry: Dict[str, Any] = {
            "name": name,
            "context": context,
            "observation": observation,
            "tensors": [
                {"name": s.name, "type": s.type_name, "shape": list(s.shape), "hex": raw.hex()}
                for s, raw in zip(specs, raws)
            ],
        }
        if reward_bytes is not None:
            entry["reward_hex"] = reward_bytes.hex()
        described.append(entry)
        pb_reply = protobuf_message(0, specs, tensors)
        written[out / f"{name}.bitstream.bin"] = b"".join(raws)
        written[out / f"{name}.json.bin"] = json_codec.encode_request(observation, specs, values)
        written[out / f"{name}.protobuf.bin"] = protobuf_message(observation, specs, tensors)
        written[out / f"{name}.reply.json.bin"] = json_codec.encode_reply(specs, values)
        written[out / f"{name}.reply.protobuf.bin"] = pb_reply
        written[out / f"{name}.log.bin"] = training_log(
            context, specs, b"".join(raws), reward_bytes
        )
    frame_bytes, frame_list = frames()
    written[out / "frames.bin"] = frame_bytes
    written[out / "frames.json"] = (json.dumps(frame_list, indent=2) + "\n").encode()
    written[out / "cases.json"] = (json.dumps(described, indent=2) + "\n").encode()
    for path, data in written.items():
        path.write_bytes(data)
    return list(written)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "tests" / "golden",
        help="output directory (default: tests/golden)",
    )
    args = parser.parse_args(argv)
    paths = write(args.out)
    print(f"make_golden_vectors: wrote {len(paths)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
