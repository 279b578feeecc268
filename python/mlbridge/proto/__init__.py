"""Generated protobuf modules (made by tools/gen_proto.py at setup; not committed)."""
