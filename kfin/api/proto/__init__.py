"""kfin's own protobuf messages (metadata.proto) and the module protoc generates from them."""
