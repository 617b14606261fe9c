"""Fine-tune a large language model with FSDP across the GPUs of one node."""
import argparse
import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

from data import TokenDataset


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--num-workers", type=int, default=4)
    return ap.parse_args()


def main():
    args = parse()
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    model = FSDP(model, auto_wrap_policy=policy, device_id=rank)
    ds = TokenDataset(args.data)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=DistributedSampler(ds),
                        num_workers=args.num_workers, pin_memory=True)
    optim = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for batch in loader:
        loss = model(**{k: v.cuda() for k, v in batch.items()}).loss
        loss.backward()
        optim.step()
        optim.zero_grad()


if __name__ == "__main__":
    main()
