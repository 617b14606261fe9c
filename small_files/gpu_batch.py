"""Decode and augment a whole batch on the GPU: the `--decode gpu` path of lesson 9 (many small files).

Why: on a GPU node the loader's workers spend almost all their time decoding JPEGs and cropping
them (95 ms of 98 ms a batch of 64 on the H100 node), so the file layout cannot change the
speed: the CPUs decide. Here the workers only hand over each image's bytes; the main process
decodes the batch with nvJPEG (`torchvision.io.decode_jpeg` on a list, one batched call) and
does the random resized crop, flip and normalisation for all images at once.

The crop is one `torchvision.ops.roi_align` call over a box per image (bilinear sampling,
averaged over as many points per output pixel as the box is larger than the output, so a
shrink is smoothed as an antialiased resize would be). Transforms v2 on a batch tensor would
crop every image the same way, and a Python loop of per-image crops was measured 9x slower
than one kernel for all of them (issue 36). The crop boxes are drawn on the CPU with a seeded
generator, as torchvision's RandomResizedCrop draws them (10 tries, then a centre crop).
"""
from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

import torch
from torch.utils.data import default_collate
from torchvision.io import ImageReadMode, decode_jpeg, encode_jpeg
from torchvision.ops import roi_align

from small_files.slots import BatchSlots, InSlot
from small_files.transforms import IMAGENET_MEAN, IMAGENET_STD

SCALE, RATIO, TRIES = (0.08, 1.0), (3 / 4, 4 / 3), 10

# (JPEG bytes of the images nvJPEG decodes, uint8), (their byte counts), (labels of the whole batch),
# (the other images, decoded by the worker: (K, 3, H, W) uint8, a list when their sizes differ, or in a slot),
# and from tiled shards a fifth: where each sample lies in the sheets (shardread.cells)
Packed = (tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | list[torch.Tensor] | InSlot]
          | tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor], torch.Tensor])


def nvjpeg_count(images: int, gpu_share: float) -> int:
    """How many of a batch's images stay JPEG bytes for nvJPEG; the workers decode the rest."""
    return round(gpu_share * images)


def pack(jpegs: Sequence[bytes], labels: Sequence[int], gpu_share: float = 1.0,
         slots: BatchSlots | None = None, where: torch.Tensor | None = None) -> Packed:
    """One batch, cheap to hand from a worker to the main process: the first `gpu_share` of its
    images stay JPEG bytes for nvJPEG, the rest the worker decodes itself (libjpeg-turbo, no
    augmentation), so that the CPUs take the part of the decoding that nvJPEG cannot keep up with.
    With `slots`, the decoded images go into the worker's next batch slot where they fit.
    From tiled shards (`where` given), every sheet goes to nvJPEG whatever the share."""
    if where is not None:
        return (*pack(jpegs, labels), where)
    on_gpu = nvjpeg_count(len(jpegs), gpu_share)
    joined = bytearray(b"".join(jpegs[:on_gpu]))
    data = torch.frombuffer(joined, dtype=torch.uint8) if joined else torch.empty(0, dtype=torch.uint8)
    rest = [torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs[on_gpu:]]
    # one call for the list: 9 % less CPU a 160 px image than a call each (2-core machine, min of 15)
    decoded: torch.Tensor | list[torch.Tensor] | InSlot = decode_jpeg(rest, mode=ImageReadMode.RGB) if rest else []
    if slots is not None and (ref := slots.fill(decoded)) is not None:
        decoded = ref
    elif decoded and len({d.shape for d in decoded}) == 1:
        decoded = default_collate(decoded)  # in a worker, stacked straight into shared memory: no copy on hand-over
    return (data, torch.tensor([len(j) for j in jpegs[:on_gpu]], dtype=torch.int64),
            torch.tensor(labels, dtype=torch.int64), decoded)


class Packer:
    """pack() with a fixed share (and batch slots, if any), as a picklable callable for the loader's workers."""

    def __init__(self, gpu_share: float = 1.0, slots: BatchSlots | None = None) -> None:
        self.gpu_share, self.slots = gpu_share, slots

    def __call__(self, jpegs: Sequence[bytes], labels: Sequence[int], where: torch.Tensor | None = None) -> Packed:
        return pack(jpegs, labels, self.gpu_share, self.slots, where)

    def samples(self, samples: Sequence[tuple[bytes, int]]) -> Packed:
        """As a DataLoader collate_fn: (bytes, label) samples of an image folder."""
        return pack([data for data, _ in samples], [label for _, label in samples], self.gpu_share, self.slots)


CropDraws = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (N, TRIES) area shares, (N, TRIES) log ratios, (N, 2)


def draw_crops(n: int, generator: torch.Generator) -> CropDraws:
    """The random numbers of n crops, drawn before the images' sizes are known (a decoding thread
    learns them later), in the order crop_boxes has always drawn them."""
    area = torch.empty(n, TRIES, dtype=torch.float64).uniform_(*SCALE, generator=generator)
    log_ratio = torch.empty(n, TRIES, dtype=torch.float64).uniform_(math.log(RATIO[0]), math.log(RATIO[1]),
                                                                    generator=generator)
    return area, log_ratio, torch.rand(n, 2, dtype=torch.float64, generator=generator)


def crop_boxes(heights: torch.Tensor, widths: torch.Tensor, draws: torch.Generator | CropDraws) -> torch.Tensor:
    """(N, 4) boxes x1, y1, x2, y2 of a random resized crop per image, drawn as RandomResizedCrop does:
    up to 10 tries of an area in SCALE and an aspect ratio in RATIO (log-uniform), else the centre crop.
    `draws`: a generator, or the numbers draw_crops took from one."""
    n = len(heights)
    area_share, log_ratio, u = draw_crops(n, draws) if isinstance(draws, torch.Generator) else draws
    h, w = heights.double()[:, None], widths.double()[:, None]
    area = h * w * area_share
    aspect = torch.exp(log_ratio)
    cw, ch = torch.sqrt(area * aspect).round(), torch.sqrt(area / aspect).round()
    ok = (cw > 0) & (cw <= w) & (ch > 0) & (ch <= h)
    first = torch.where(ok.any(1), ok.double().argmax(1), -1)
    pick = first.clamp(min=0)[:, None]
    cw, ch = cw.gather(1, pick)[:, 0], ch.gather(1, pick)[:, 0]
    # No try fitted: the centre crop with the ratio clamped into RATIO, as torchvision falls back.
    h1, w1 = h[:, 0], w[:, 0]
    in_ratio = w1 / h1
    fw = torch.where(in_ratio < RATIO[0], w1, torch.where(in_ratio > RATIO[1], (h1 * RATIO[1]).round(), w1))
    fh = torch.where(in_ratio < RATIO[0], (w1 / RATIO[0]).round(), h1)
    cw, ch = torch.where(first < 0, fw, cw), torch.where(first < 0, fh, ch)
    top = torch.where(first < 0, torch.floor((h1 - ch) / 2), torch.floor(u[:, 0] * (h1 - ch + 1)))
    left = torch.where(first < 0, torch.floor((w1 - cw) / 2), torch.floor(u[:, 1] * (w1 - cw + 1)))
    return torch.stack([left, top, left + cw, top + ch], 1).float()


def _to(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A CPU tensor to the device without waiting for the GPU (a pageable copy would)."""
    if device.type != "cuda":
        return t
    return (t if t.is_pinned() else t.pin_memory()).to(device, non_blocking=True)


def augment(images: torch.Tensor, boxes: torch.Tensor, flips: torch.Tensor, size: int,
            image: torch.Tensor | None = None) -> torch.Tensor:
    """Crop each image to its box, resize to size x size, flip where asked, normalise: one call each.

    images: (N, 3, H, W) uint8 on any device; boxes: (N, 4) pixel edges; flips: (N,) bool. With
    `image`, box k is cut from images[image[k]] (several samples from one tiled sheet).
    """
    out = roi_align(images.float(), _rois(boxes, images.device, image), output_size=(size, size), spatial_scale=1.0,
                    sampling_ratio=-1, aligned=True)
    return _flip_normalise(out, flips)


def _rois(boxes: torch.Tensor, device: torch.device, image: torch.Tensor | None = None) -> torch.Tensor:
    """roi_align's boxes: the image's index in the batch, then x1, y1, x2, y2."""
    index = torch.arange(len(boxes)) if image is None else image
    return _to(torch.cat([index.float()[:, None], boxes], 1), device)


def _flip_normalise(out: torch.Tensor, flips: torch.Tensor) -> torch.Tensor:
    out = torch.where(_to(flips, out.device)[:, None, None, None], out.flip(3), out)
    scale = _to(torch.tensor([IMAGENET_MEAN, IMAGENET_STD]).mul_(255).view(2, 1, 3, 1, 1), out.device)
    return out.sub_(scale[0]).div_(scale[1])


def decode(data: torch.Tensor, sizes: torch.Tensor, device: torch.device) -> list[torch.Tensor]:
    """nvJPEG on the whole batch in one call (decode_jpeg on a list; on GPUs that have them, nvJPEG
    uses the hardware JPEG engines); RGB, (3, H, W) uint8 each."""
    if len(sizes) == 0:
        return []
    parts = list(torch.split(data, sizes.tolist()))
    return decode_jpeg(parts, mode=ImageReadMode.RGB, device=device)


def stack(images: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One (N, 3, Hmax, Wmax) tensor and each image's height and width (smaller ones padded)."""
    heights = torch.tensor([im.shape[1] for im in images])
    widths = torch.tensor([im.shape[2] for im in images])
    if bool((heights == heights[0]).all() and (widths == widths[0]).all()):
        return torch.stack(images), heights, widths
    canvas = images[0].new_zeros(len(images), 3, int(heights.max()), int(widths.max()))
    for i, im in enumerate(images):
        canvas[i, :, :im.shape[1], :im.shape[2]] = im
    return canvas, heights, widths


class GpuBatches:
    """The training loader, with each packed batch decoded and augmented on the GPU.

    On CUDA a helper thread does it one or two batches ahead, on its own stream: nvJPEG's call
    blocks the calling thread until its batch is decoded (it releases the GIL meanwhile), so in
    the main thread it would stop the launching of the training step. With `threads` > 1, that
    many helpers take batches in turn, each on its own stream, and hand them over in the loader's
    order with the crops the single helper would have drawn. torchvision decodes under one lock, so
    they overlap one decode with the others' crops: on 8 x 8 sheets over sshfs, cold, three kept
    H100s and an H200 89 to 94 % busy over 300,000-image epochs (docs/small-files.md).
    Two clocks split the loop's data wait: `loader_wait` is the helpers' time waiting for the
    workers' bytes, `prepare` their time decoding and augmenting (summed over the helpers). With
    `slots`, the images the workers decoded arrive in batch slots (small_files/slots.py), each given
    back once its copy to the GPU is done; slots keep one helper.
    """

    def __init__(self, loader: Iterable[Packed], device: torch.device, size: int, seed: int,
                 memory_format: torch.memory_format = torch.contiguous_format, ahead: int = 2,
                 slots: BatchSlots | None = None, threads: int = 1) -> None:
        self.loader, self.device, self.size, self.ahead, self.threads = loader, device, size, ahead, threads
        self.memory_format, self.slots = memory_format, slots
        self.copying: deque[tuple[torch.cuda.Event, InSlot]] = deque()  # slots being copied to the GPU
        self.generator = torch.Generator().manual_seed(seed)
        self.loader_wait = self.prepare = 0.0

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def from_slot(self, ref: InSlot) -> torch.Tensor:
        """The slot's images on the device; the slot is given back once they are copied."""
        assert self.slots is not None
        if self.device.type != "cuda":
            out = self.slots.view(ref).clone()
            self.slots.release(ref)
            return out
        while self.copying and self.copying[0][0].query():  # copies finish in order on one stream
            self.slots.release(self.copying.popleft()[1])
        out = self.slots.view(ref).to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        self.copying.append((event, ref))
        return out

    def release_all(self) -> None:
        """Wait for the copies still running and give their slots back (the end of a pass)."""
        while self.copying:
            event, ref = self.copying.popleft()
            event.synchronize()
            self.slots.release(ref)  # type: ignore[union-attr]

    def draws(self, labels: torch.Tensor) -> tuple[CropDraws, torch.Tensor]:
        """A batch's crop numbers and flips, from the one generator, in batch order."""
        return draw_crops(len(labels), self.generator), torch.rand(len(labels), generator=self.generator) < 0.5

    def batch(self, packed: Packed,
              drawn: tuple[CropDraws, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        data, sizes, labels, decoded, *tiled = packed
        crops, flips = drawn or self.draws(labels)
        if tiled:  # sheets of tiled shards: decode each once, cut every sample from its own
            sheets, _, _ = stack(decode(data, sizes, self.device))
            where = tiled[0]  # per sample: sheet, x, y, width, height
            boxes = crop_boxes(where[:, 4], where[:, 3], crops) + where[:, [1, 2, 1, 2]].float()
            out = augment(sheets, boxes, flips, self.size, where[:, 0])
            return out.contiguous(memory_format=self.memory_format), labels
        if isinstance(decoded, InSlot):
            decoded = list(self.from_slot(decoded).unbind())
        elif isinstance(decoded, torch.Tensor):
            decoded = list(_to(decoded, self.device).unbind()) if len(decoded) else []
        else:
            decoded = [_to(d, self.device) for d in decoded]
        images, heights, widths = stack(decode(data, sizes, self.device) + decoded)
        boxes = crop_boxes(heights, widths, crops)
        return augment(images, boxes, flips, self.size).contiguous(memory_format=self.memory_format), labels

    def warm_up(self, batch_size: int, side: int = 160) -> None:
        """Decode one batch of a made-up JPEG, so nvJPEG's start-up is not timed as data wait."""
        jpeg = encode_jpeg(torch.randint(0, 255, (3, side, side), dtype=torch.uint8)).numpy().tobytes()
        self.batch(pack([jpeg] * batch_size, [0] * batch_size))
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _timed(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        tick = time.perf_counter()
        for packed in self.loader:
            got = time.perf_counter()
            self.loader_wait += got - tick
            out = self.batch(packed)
            tick = time.perf_counter()
            self.prepare += tick - got
            yield out
            tick = time.perf_counter()

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if self.slots is not None:
            self.slots.reset()  # the last pass gave back every slot it used, or its workers are gone
        cuda = self.device.type == "cuda"
        if not cuda and self.threads == 1:
            yield from self._timed()
            return
        if cuda and self.slots is not None:
            self.slots.page_lock()
        threads = self.threads if self.slots is None else 1  # slots are given back in one stream's order
        ready: queue.Queue = queue.Queue(maxsize=self.ahead)
        stop = threading.Event()
        source, reading, turn = iter(self.loader), threading.Lock(), threading.Condition()
        count = {"read": 0, "handed": 0, "finished": 0}

        def hand_over(item: object) -> bool:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            stream = torch.cuda.Stream(self.device) if cuda else None
            try:
                with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
                    while not stop.is_set():
                        with reading:  # one reader at a time: the loader's order, and the generator's
                            tick = time.perf_counter()
                            packed = next(source, None)
                            self.loader_wait += time.perf_counter() - tick
                            if packed is None:
                                break
                            mine, drawn = count["read"], self.draws(packed[2])
                            count["read"] += 1
                        tick = time.perf_counter()
                        images, labels = self.batch(packed, drawn)
                        event = torch.cuda.Event() if cuda else None
                        if event is not None:
                            event.record(stream)
                        with turn:  # batches leave in the loader's order, whichever thread made them
                            self.prepare += time.perf_counter() - tick
                            while count["handed"] != mine and not stop.is_set():
                                turn.wait(0.1)
                            if not hand_over((images, labels, event)):
                                return
                            count["handed"] += 1
                            turn.notify_all()
            except BaseException as exc:  # a bad shard in a worker: raised again in the training loop
                hand_over(exc)
            finally:
                if threads == 1 and cuda:
                    self.release_all()
                with turn:
                    count["finished"] += 1
                    last = count["finished"] == threads
                if last:  # every other thread has handed over all it read
                    hand_over(None)

        helpers = [threading.Thread(target=produce, name=f"gpu-decode-{k}", daemon=True) for k in range(threads)]
        for helper in helpers:
            helper.start()
        try:
            while (item := ready.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                images, labels, event = item
                if event is not None:
                    current = torch.cuda.current_stream(self.device)
                    current.wait_event(event)
                    images.record_stream(current)  # made on a helper's stream, used and freed on this one
                yield images, labels
        finally:
            stop.set()
            for helper in helpers:
                helper.join(timeout=10)


