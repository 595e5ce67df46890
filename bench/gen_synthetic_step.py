#!/usr/bin/env python3
"""Writes a synthetic ddp step of about N ops to stdout.

Each "layer" is the backward of one linear layer with its data-parallel
reduction issued asynchronously and waited one layer later, so that the
simulator sees compute, collectives on a communication stream and waits that
sometimes block: 9 ops per layer (get_param, gemm fwd, compute, gemm dgrad,
gemm wgrad, grad_ready, all_reduce async, wait, sgd).

Used by bench/dialect/bench_parse.py (parse, verify, print per op) and
bench/sim/bench_sim.py (simulation per op).

Usage: gen_synthetic_step.py N > step.mlir
"""

import sys

OPS_PER_LAYER = 9


def write_step(n, out):
    layers = max(1, n // OPS_PER_LAYER)
    act = "tensor<2048x1024xbf16>"
    weight = "tensor<1024x1024xbf16>"
    out.write("ddp.mesh @world(dp = 64, tp = 8)\n")
    for i in range(layers):
        out.write(f"ddp.param @w{i} layer {i} : {weight}\n")
    out.write(f"func.func @step(%x: {act}, %dy: {act}) {{\n")
    pending = None
    for i in range(layers):
        out.write(f"  %w{i} = ddp.get_param @w{i} : {weight}\n")
        out.write(f"  %h{i} = ddp.gemm fwd %x, %w{i} layer {i} : {act}, {weight} -> {act}\n")
        out.write(f"  %a{i} = ddp.compute \"gelu\"(%h{i}) flops 2.0e7 bytes 8.0e6 layer {i}"
                  f" : ({act}) -> {act}\n")
        out.write(f"  %dh{i} = ddp.gemm dgrad %dy, %w{i} transposed layer {i} : {act}, {weight} -> {act}\n")
        out.write(f"  %dw{i} = ddp.gemm wgrad %x transposed, %dy layer {i} : {act}, {act} -> {weight}\n")
        out.write(f"  %g{i} = ddp.grad_ready @w{i}, %dw{i} : {weight}\n")
        out.write(f"  %r{i}, %t{i} = ddp.all_reduce avg %g{i} over @world[dp] async : {weight}\n")
        if pending is not None:
            out.write(f"  ddp.wait %t{pending}\n")
            out.write(f"  ddp.sgd @w{pending}, %r{pending} lr 1.0e-2 : {weight}\n")
        pending = i
    out.write(f"  ddp.wait %t{pending}\n")
    out.write(f"  ddp.sgd @w{pending}, %r{pending} lr 1.0e-2 : {weight}\n")
    out.write("  return\n}\n")


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: gen_synthetic_step.py NUM_OPS")
    write_step(int(sys.argv[1]), sys.stdout)


if __name__ == "__main__":
    main()
