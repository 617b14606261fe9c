"""Several decoding threads, each with its own nvJPEG hardware handle: do they scale, alone and beside the step?"""
import json, queue, sys, threading, time
import torch
sys.path.insert(0, "benchmarks")
import gpu_decode_pipeline as g
from digits.graphed_step import GraphedStep
from small_files import gpu_batch
from small_files.nvjpeg import HardwareDecoder
from small_files.train import resnet18

dev = torch.device("cuda")
made = g.packed_batches(40, 256, {1.0})[1.0]
net = resnet18(10).to(dev).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(net.parameters(), lr=torch.tensor(0.01, device=dev), momentum=0.9, fused=True)
step = GraphedStep(net, opt, amp=True)
gpu = gpu_batch.GpuBatches(made, dev, 128, seed=0, memory_format=torch.channels_last)
gpu.warm_up(256)
x, y = gpu.batch(made[0]); y = y.to(dev)
for _ in range(6):
    step(x, y)
torch.cuda.synchronize()
DECODERS = [HardwareDecoder(dev) for _ in range(4)]


def run(threads, engines, with_step, n=160):
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
                data, sizes, labels, _ = made[i % 40]
                imgs = DECODERS[k].decode_rgb(data, sizes) if engines else gpu_batch.decode(data, sizes, dev, False)
                images, h, w = gpu_batch.stack(imgs)
                out = gpu_batch.augment(images, gpu_batch.crop_boxes(h, w, gen), torch.rand(len(labels), generator=gen) < 0.5, 128)
                out = out.contiguous(memory_format=torch.channels_last)
                ev = torch.cuda.Event(); ev.record(s)
                q.put((out, labels, ev))
    ths = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(threads)]
    torch.cuda.synchronize()
    with g.Busy() as busy:
        t = time.perf_counter()
        for th in ths:
            th.start()
        for _ in range(n):
            out, labels, ev = q.get()
            cur = torch.cuda.current_stream(); cur.wait_event(ev); out.record_stream(cur)
            if with_step:
                step(out, labels.to(dev, non_blocking=True))
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
    for th in ths:
        th.join()
    row = {"threads": threads, "engines": engines, "step": with_step, "images_per_s": round(n * 256 / dt), "gpu_busy_pct": round(busy.pct, 1)}
    print(json.dumps(row), flush=True)
    return row


rows = []
for rep in range(2):
    for with_step in (0, 1):
        rows.append(run(1, 0, with_step))
        for t in (1, 2, 3, 4):
            rows.append(run(t, 1, with_step))
