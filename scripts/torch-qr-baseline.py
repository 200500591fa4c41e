#!/usr/bin/env python3
"""The peer baseline of the batched QR retraction: torch.linalg.qr on the GPU for a batch of n x p float64
matrices, qf(X + tV) with the sign fix diag(R) > 0 as geovb's QRRetract computes it. Prints one JSON line with the
median time over repeats (CUDA events, after warm-up). Run by scripts/gpu-check.sh beside vbbench, on the same GPU.

usage: torch-qr-baseline.py [batch n p]   (default 100000 64 8)
"""
import json
import sys

import torch


def main():
    batch, n, p = (int(a) for a in sys.argv[1:4]) if len(sys.argv) >= 4 else (100000, 64, 8)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    # Rotate three input sets so the timing does not measure a cache-resident batch.
    sets = [(torch.randn(batch, n, p, device=dev, dtype=torch.float64, generator=g),
             torch.randn(batch, n, p, device=dev, dtype=torch.float64, generator=g)) for _ in range(3)]
    t = 0.1

    def retract(x, v):
        q, r = torch.linalg.qr(x + t * v, mode="reduced")
        s = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
        s[s == 0] = 1
        return q * s.unsqueeze(-2)

    for k in range(3):
        retract(*sets[k])
    torch.cuda.synchronize()
    times = []
    for k in range(15):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        retract(*sets[k % 3])
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    times.sort()
    med = times[len(times) // 2]
    nbytes = 8 * batch * n * p * 3  # read X and V, write Q
    print(json.dumps({"workload": "torch.linalg.qr retraction", "batch": batch, "n": n, "p": p,
                      "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "median_s": med, "min_s": times[0], "max_s": times[-1], "gb_per_s": nbytes / med / 1e9}))


if __name__ == "__main__":
    main()
