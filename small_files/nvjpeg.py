"""A batch of JPEGs decoded by the GPU's hardware JPEG engines, in one nvJPEG call.

Why not only `torchvision.io.decode_jpeg(list, device="cuda")`? It reaches the same engines (the
A100, H100 and H200 have them), but around them it does per-image work on one thread behind one
lock: a header scan, an output allocation and tensor views for each image, and a stream
synchronisation before and after. This binds, through ctypes, the libnvjpeg that torchvision's
wheel ships, so it adds no package.

Only what the batched hardware decoder accepts comes here: baseline JPEGs. Where the GPU has no
engines, the library is missing, or an image is progressive, these return None and the caller
decodes with torchvision instead.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading

import numpy as np
import torch

BACKEND_HARDWARE = 3  # nvjpegBackend_t
OUTPUT_RGB = 3  # nvjpegOutputFormat_t: planar R, G, B
MAX_COMPONENT = 4
_P, _SIZE, _UINT = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint)
_SIGNATURES = {  # name: argument types; every function returns an nvjpegStatus_t (0 = success)
    "nvjpegCreateEx": [ctypes.c_int, _P, _P, ctypes.c_uint, ctypes.POINTER(_P)],
    "nvjpegJpegStateCreate": [_P, ctypes.POINTER(_P)],
    "nvjpegJpegStreamCreate": [_P, ctypes.POINTER(_P)],
    "nvjpegJpegStreamParseHeader": [_P, _P, _SIZE, _P],
    "nvjpegJpegStreamGetFrameDimensions": [_P, _UINT, _UINT],
    "nvjpegDecodeBatchedSupported": [_P, _P, ctypes.POINTER(ctypes.c_int)],
    "nvjpegDecodeBatchedInitialize": [_P, _P, ctypes.c_int, ctypes.c_int, ctypes.c_int],
    "nvjpegDecodeBatched": [_P, _P, _P, _P, _P, _P],
}


def library_path() -> str | None:
    """torchvision's own libnvjpeg (its wheel bundles one), else the system's."""
    import torchvision

    bundled = sorted(glob.glob(os.path.join(os.path.dirname(torchvision.__file__), os.pardir,
                                            "torchvision.libs", "libnvjpeg*.so*")))
    return bundled[0] if bundled else ctypes.util.find_library("nvjpeg")


class HardwareDecoder:
    """One nvJPEG handle on the hardware backend, for one thread at a time (a lock guards it)."""

    def __init__(self, device: torch.device) -> None:
        path = library_path()
        if path is None:
            raise OSError("no libnvjpeg found")
        self.lib, self.device, self.lock = ctypes.CDLL(path), device, threading.Lock()
        for name, argtypes in _SIGNATURES.items():
            getattr(self.lib, name).argtypes = argtypes
        self.handle, self.state, self.stream = _P(), _P(), _P()
        with torch.cuda.device(device):
            self._check("nvjpegCreateEx", BACKEND_HARDWARE, None, None, 0, ctypes.byref(self.handle))
            self._check("nvjpegJpegStateCreate", self.handle, ctypes.byref(self.state))
            self._check("nvjpegJpegStreamCreate", self.handle, ctypes.byref(self.stream))
        self.initialised: tuple[int, int] | None = None  # (batch size, output format) of the state

    def _check(self, name: str, *args: object) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise OSError(f"{name} failed with nvjpegStatus {status}")

    def dimensions(self, addresses: np.ndarray, lengths: np.ndarray) -> list[tuple[int, int]] | None:
        """Each image's (height, width), or None if any is one the engines cannot decode."""
        lib, stream = self.lib, self.stream
        supported, height, width = ctypes.c_int(), ctypes.c_uint(), ctypes.c_uint()
        out = []
        for address, length in zip(addresses.tolist(), lengths.tolist()):
            if (lib.nvjpegJpegStreamParseHeader(self.handle, address, length, stream) != 0
                    or lib.nvjpegDecodeBatchedSupported(self.handle, stream, ctypes.byref(supported)) != 0
                    or supported.value != 0):
                return None
            lib.nvjpegJpegStreamGetFrameDimensions(stream, ctypes.byref(width), ctypes.byref(height))
            out.append((height.value, width.value))
        return out

    def _decode(self, addresses: np.ndarray, lengths: np.ndarray, planes: np.ndarray, output: int) -> None:
        if self.initialised != (len(lengths), output):
            self._check("nvjpegDecodeBatchedInitialize", self.handle, self.state, len(lengths), 1, output)
            self.initialised = (len(lengths), output)
        stream = torch.cuda.current_stream(self.device)
        self._check("nvjpegDecodeBatched", self.handle, self.state, addresses.ctypes.data, lengths.ctypes.data,
                    planes.ctypes.data, stream.cuda_stream)
        # The engines finish the last images of a call after it returns, still reading the arrays and
        # the bytes handed in: wait here (the decoding thread only), as torchvision does. Without this
        # wait, training on tiled sheets diverged (loss 0.49 rising to 1.9-4.8; torchvision's 0.17).
        stream.synchronize()

    def decode_rgb(self, data: torch.Tensor, sizes: torch.Tensor) -> list[torch.Tensor] | None:
        """The batch's images as (3, H, W) uint8 on the device, any sizes; or None (decode them elsewhere).

        data: the JPEGs' bytes end to end (uint8, on the CPU, contiguous); sizes: each one's length.
        The decode runs on the current CUDA stream, and is finished when this returns.
        """
        addresses, lengths = _locate(data, sizes)
        with self.lock:
            if (found := self.dimensions(addresses, lengths)) is None:
                return None
            if len(set(found)) == 1:  # one allocation for the batch, the usual case
                images = list(torch.empty(len(found), 3, *found[0], dtype=torch.uint8, device=self.device).unbind())
            else:
                images = [torch.empty(3, h, w, dtype=torch.uint8, device=self.device) for h, w in found]
            planes = np.zeros((len(images), 2 * MAX_COMPONENT), dtype=np.uint64)  # nvjpegImage_t each
            starts = np.array([im.data_ptr() for im in images], dtype=np.uint64)
            area = np.array([h * w for h, w in found], dtype=np.uint64)
            for c in range(3):
                planes[:, c] = starts + np.uint64(c) * area
                planes[:, MAX_COMPONENT + c] = [w for _, w in found]
            self._decode(addresses, lengths, planes, OUTPUT_RGB)
        return images


def _locate(data: torch.Tensor, sizes: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Each JPEG's address in `data` and its length, as the arrays nvJPEG reads."""
    lengths = sizes.numpy().astype(np.uint64)
    starts = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.uint64)
    return np.uint64(data.data_ptr()) + starts, lengths


_decoders: dict[torch.device, HardwareDecoder | None] = {}


def hardware_decoder(device: torch.device) -> HardwareDecoder | None:
    """The device's hardware decoder, made once; None where its GPU has no JPEG engines."""
    if device not in _decoders:
        try:
            _decoders[device] = HardwareDecoder(device)
        except (OSError, AttributeError):  # no library, no engines (nvjpegStatus 7), or an old library
            _decoders[device] = None
    return _decoders[device]
