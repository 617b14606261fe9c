"""Fewer, larger JPEGs: 16 lesson images tiled into one 640 px JPEG. Does nvJPEG then keep up beside the step?"""
import io, json, queue, sys, threading, time
from concurrent.futures import ProcessPoolExecutor
import numpy as np
import torch
from PIL import Image
sys.path.insert(0, "benchmarks")
from small_files.generate import image_bytes


def mosaic(b):  # batch b: 256 images -> 16 mosaics of 4x4 tiles
    out = []
    for m in range(16):
        canvas = Image.new("RGB", (640, 640))
        for t in range(16):
            i = b * 256 + m * 16 + t
            canvas.paste(Image.open(io.BytesIO(image_bytes(0, i, i % 10, 160))), ((t % 4) * 160, (t // 4) * 160))
        buf = io.BytesIO(); canvas.save(buf, format="JPEG", quality=90); out.append(buf.getvalue())
    return out


with ProcessPoolExecutor(16) as pool:
    batches = list(pool.map(mosaic, range(40)))
print("mosaic bytes", len(batches[0][0]))
import gpu_decode_pipeline as g
from digits.graphed_step import GraphedStep
from small_files import gpu_batch
from small_files.nvjpeg import HardwareDecoder
from small_files.train import resnet18
from torchvision.ops import roi_align

dev = torch.device("cuda")
packed = [gpu_batch.pack(ms, [0] * 16) for ms in batches]
net = resnet18(10).to(dev).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(net.parameters(), lr=torch.tensor(0.01, device=dev), momentum=0.9, fused=True)
step = GraphedStep(net, opt, amp=True)
xs = torch.randn(256, 3, 128, 128, device=dev).contiguous(memory_format=torch.channels_last)
ys = torch.randint(0, 10, (256,), device=dev)
for _ in range(6):
    step(xs, ys)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(200):
    step(xs, ys)
torch.cuda.synchronize()
print(json.dumps({"step alone": round(200 * 256 / (time.perf_counter() - t))}))
DEC = [HardwareDecoder(dev) for _ in range(2)]
tile = torch.arange(256)
offs = torch.stack([(tile % 16 % 4) * 160, (tile % 16 // 4) * 160], 1).float().repeat(1, 2)


def prepare(k, q, gen, engines):
    data, sizes, _, _ = q
    imgs = DEC[k].decode_rgb(data, sizes) if engines else gpu_batch.decode(data, sizes, dev, False)
    mos = torch.stack(imgs)  # (16, 3, 640, 640)
    boxes = gpu_batch.crop_boxes(torch.full((256,), 160), torch.full((256,), 160), gen) + offs
    rois = torch.cat([(tile // 16).float()[:, None], boxes], 1).to(dev, non_blocking=True)
    out = roi_align(mos.float(), rois, (128, 128), 1.0, -1, True)
    flips = (torch.rand(256, generator=gen) < 0.5).to(dev)
    out = torch.where(flips[:, None, None, None], out.flip(3), out)
    return out.sub_(110.0).div_(60.0).contiguous(memory_format=torch.channels_last)


def run(threads, engines, with_step, n=200):
    q, lock, counter = queue.Queue(maxsize=2 * threads), threading.Lock(), [0]

    def work(k):
        gen = torch.Generator().manual_seed(k)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            while True:
                with lock:
                    i = counter[0]; counter[0] += 1
                if i >= n:
                    return
                out = prepare(k, packed[i % 40], gen, engines)
                ev = torch.cuda.Event(); ev.record(s)
                q.put((out, ev))
    ths = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(threads)]
    torch.cuda.synchronize()
    with g.Busy() as busy:
        t = time.perf_counter()
        for th in ths:
            th.start()
        for _ in range(n):
            out, ev = q.get()
            cur = torch.cuda.current_stream(); cur.wait_event(ev); out.record_stream(cur)
            if with_step:
                step(out, ys)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
    for th in ths:
        th.join()
    print(json.dumps({"threads": threads, "engines": engines, "step": with_step, "images_per_s": round(n * 256 / dt),
                      "gpu_busy_pct": round(busy.pct, 1)}), flush=True)


for rep in range(2):
    for with_step in (0, 1):
        for engines in (0, 1):
            for threads in (1, 2):
                run(threads, engines, with_step)
