"""Regenerate kfin/api/proto/metadata_pb2.py (and its .pyi, for mypy) from metadata.proto (kfin's own subset of Kubernetes' messages).

    pip install grpcio-tools && python scripts/generate_proto.py

The generated module is committed, so that installing kfin needs only the `protobuf` runtime.
"""

import sys
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent.parent / "kfin" / "api" / "proto"

if __name__ == "__main__":
    code = protoc.main(["protoc", f"-I{HERE}", f"--python_out={HERE}", f"--pyi_out={HERE}", str(HERE / "metadata.proto")])
    sys.exit(code)
