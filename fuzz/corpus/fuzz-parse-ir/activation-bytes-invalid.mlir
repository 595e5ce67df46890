module attributes {ddp.activation_bytes = {layer = -1 : i64, embedding = 0 : i64}} {
}
