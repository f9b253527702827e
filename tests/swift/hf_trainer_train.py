"""A training script of one's own on transformers' Trainer (``python train.py``, not ms-swift): a tiny
GPT-2 built from its config (nothing downloaded) trained on random tokens, on CPU. It sets
transformers' verbosity to INFO, as transformers' example scripts do on the main process, so the
Trainer's opening block is in the log. Flags: --output_dir, --max_steps, --save_steps,
--resume_from_checkpoint."""
from __future__ import annotations

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from transformers.utils import logging


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output_dir", required=True)
    ap.add_argument("--max_steps", type=int, default=40)
    ap.add_argument("--save_steps", type=int, default=4)
    ap.add_argument("--resume_from_checkpoint")
    a = ap.parse_args()
    logging.set_verbosity_info()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=16))
    ids = torch.randint(0, 64, (64, 16))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = TrainingArguments(output_dir=a.output_dir, max_steps=a.max_steps, save_steps=a.save_steps,
                             save_strategy="steps", logging_steps=1, per_device_train_batch_size=2,
                             report_to=[], use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=data).train(resume_from_checkpoint=a.resume_from_checkpoint)


if __name__ == "__main__":
    main()
