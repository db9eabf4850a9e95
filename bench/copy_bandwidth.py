#!/usr/bin/env python3
"""Device-to-device copy bandwidth of GPU 0 (torch, CUDA events): the reference that the
benchmark scripts quote achieved search bandwidth against. 4 GiB read + 4 GiB written per copy,
median of 10 after 3 warm-ups; prints one `copy_bandwidth ...` line."""
import torch

n = 4 << 30
src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
dst = torch.empty_like(src)
for _ in range(3):
    dst.copy_(src)
ts = []
for _ in range(10):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    dst.copy_(src)
    b.record()
    b.synchronize()
    ts.append(a.elapsed_time(b) / 1e3)
ts.sort()
med = ts[len(ts) // 2]
assert torch.equal(dst[: 1 << 20], src[: 1 << 20])
print(f"copy_bandwidth {torch.cuda.get_device_name()}: 4 GiB read + 4 GiB written, median of 10 "
      f"{med * 1e3:.3f} ms -> {2 * n / med / 1e9:.1f} GB/s (best {2 * n / ts[0] / 1e9:.1f} GB/s)")
