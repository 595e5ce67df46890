#!/usr/bin/env python3
"""Writes a synthetic ddp step of about N ops: a chain of layers, each with a
parameter, forward/dgrad/wgrad GEMMs, costed compute, grad_ready, an
asynchronous all-reduce with its wait, and an SGD update.

    gen_synthetic_step.py N > step.mlir
"""
import sys

# param, get_param, 3 gemm, compute, grad_ready, scale, all_reduce, wait, sgd
OPS_PER_LAYER = 11


def write_step(n, out):
    layers = max(1, n // OPS_PER_LAYER)
    out.write("ddp.mesh @world(dp = 8, tp = 2)\n")
    for i in range(layers):
        out.write(f"ddp.param @layers.{i}.weight layer {i} tp_dim 1 : tensor<64x64xbf16>\n")
    out.write("func.func @step(%x: tensor<32x64xbf16>, %dy: tensor<32x64xbf16>) {\n")
    h, dh = "%x", "%dy"
    for i in range(layers):
        out.write(f"  %w{i} = ddp.get_param @layers.{i}.weight : tensor<64x64xbf16>\n")
        out.write(f"  %y{i} = ddp.gemm fwd {h}, %w{i} layer {i} : tensor<32x64xbf16>, tensor<64x64xbf16> -> tensor<32x64xbf16>\n")
        out.write(f"  %a{i} = ddp.compute \"gelu\"(%y{i}) flops 16384.0 bytes 8192.0 layer {i} : (tensor<32x64xbf16>) -> tensor<32x64xbf16>\n")
        out.write(f"  %dw{i} = ddp.gemm wgrad {h} transposed, {dh} layer {i} : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>\n")
        out.write(f"  %dx{i} = ddp.gemm dgrad {dh}, %w{i} transposed layer {i} : tensor<32x64xbf16>, tensor<64x64xbf16> -> tensor<32x64xbf16>\n")
        out.write(f"  %g{i} = ddp.grad_ready @layers.{i}.weight, %dw{i} : tensor<64x64xbf16>\n")
        out.write(f"  %s{i} = ddp.scale %g{i} by 0.125 : tensor<64x64xbf16>\n")
        out.write(f"  %r{i}, %t{i} = ddp.all_reduce sum %s{i} over @world[dp] async : tensor<64x64xbf16>\n")
        out.write(f"  ddp.wait %t{i}\n")
        out.write(f"  ddp.sgd @layers.{i}.weight, %r{i} lr 0.01 : tensor<64x64xbf16>\n")
        h, dh = f"%a{i}", f"%dx{i}"
    out.write("  return\n}\n")


def main():
    write_step(int(sys.argv[1]), sys.stdout)


if __name__ == "__main__":
    main()
