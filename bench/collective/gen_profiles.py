#!/usr/bin/env python3
"""Writes the model profiles of configs/models/ from the real architectures, without weights.

Each model is built on PyTorch's meta device (shapes and types only: no memory, no download) from
torchvision (resnet50, vgg16, densenet161) or a transformers configuration written out here
(bert-large-uncased, GPT-2 small/medium/large/xl), so no network is needed. A profile lists the
parameter tensors in backward order - the reverse of registration order, the order PyTorch DDP
assumes gradients become ready in - with name, numel and dtype, plus a compute_weight: the
backward FLOPs of the module that owns the tensor (2x its forward FLOPs, counted from the shapes
seen by forward hooks during a meta-device forward pass), so the emulator issues each bucket's
all-reduce after the right share of the backward compute. Format: docs/collective.md.

  python3 gen_profiles.py --out configs/models            # every model
  python3 gen_profiles.py --out /tmp/models resnet50 bert-large
"""
import argparse
import csv
import math
import os
import sys

# The seed's measured A100 iteration times (Salamy 2022), forward + backward.
SEED_MS = {"resnet50": 160.0, "vgg16": 370.0, "densenet161": 380.0, "bert-large": 840.0}
SEED_SOURCE = "seed: Salamy 2022, measured A100 iteration time (PyTorch DDP, fp32)"
# GPT-2 has no seed time: 6 x parameters x tokens FLOPs at 40 % of an A100's 312 TFLOP/s.
GPT_TOKENS = 8 * 1024
GPT_FLOPS = 0.4 * 312e12
GPT2 = {"gpt2": (768, 12, 12), "gpt2-medium": (1024, 24, 16), "gpt2-large": (1280, 36, 20), "gpt2-xl": (1600, 48, 25)}
FORWARD_FRACTION = 1.0 / 3.0  # backward is about twice the forward


def build(name):
    """The model on the meta device, its example input, and where it comes from."""
    import torch
    with torch.device("meta"):
        if name in ("resnet50", "vgg16", "densenet161"):
            import torchvision
            model = getattr(torchvision.models, name)(weights=None)
            return model, (torch.zeros(1, 3, 224, 224),), f"torchvision {torchvision.__version__} {name}(weights=None)"
        import transformers
        if name == "bert-large":
            config = transformers.BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                                             num_attention_heads=16, intermediate_size=4096,
                                             max_position_embeddings=512, type_vocab_size=2)
            model = transformers.BertForPreTraining(config)
            source = f"transformers {transformers.__version__} BertForPreTraining, bert-large-uncased configuration"
            return model, (torch.zeros(1, 512, dtype=torch.long),), source
        if name in GPT2:
            hidden, layers, heads = GPT2[name]
            config = transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads)
            model = transformers.GPT2LMHeadModel(config)
            source = f"transformers {transformers.__version__} GPT2LMHeadModel, {name} configuration"
            return model, (torch.zeros(1, 1024, dtype=torch.long),), source
    raise SystemExit(f"gen_profiles.py: unknown model '{name}'")


def module_flops(module, output):
    """Forward FLOPs of one module from the shapes it saw; None when it has no rule."""
    import torch
    out = output[0] if isinstance(output, (tuple, list)) else output
    if not isinstance(out, torch.Tensor):
        return None
    n = out.numel()
    if isinstance(module, torch.nn.Conv2d):
        k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
        return 2 * n * k
    if isinstance(module, torch.nn.Linear):
        return 2 * n * module.in_features
    if type(module).__name__ == "Conv1D":  # GPT-2's linear layers (transformers.pytorch_utils.Conv1D)
        return 2 * n * module.weight.shape[0]
    if isinstance(module, (torch.nn.BatchNorm2d, torch.nn.LayerNorm, torch.nn.Embedding)):
        return 5 * n  # element-wise: small next to the matrix products
    return None


def compute_weights(model, inputs):
    """Backward FLOPs per parameter (by id): 2x the forward FLOPs of its module, on its first parameter."""
    import torch
    weights, handles = {}, []

    def hook(module, _inputs, output):
        flops = module_flops(module, output)
        params = list(module.parameters(recurse=False))
        if flops is None or not params:
            return
        weights[id(params[0])] = weights.get(id(params[0]), 0) + 2 * flops
        for p in params[1:]:
            weights.setdefault(id(p), 0)

    for m in model.modules():
        if list(m.parameters(recurse=False)):
            handles.append(m.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as error:  # a model whose forward does not run on meta: fall back to numel
        print(f"gen_profiles.py: {type(model).__name__}: no FLOP weights ({error}); numel used", file=sys.stderr)
        weights = {}
    finally:
        for h in handles:
            h.remove()
    return weights


def write(name, out_dir, params_table):
    model, inputs, source = build(name)
    weights = compute_weights(model, inputs)
    params = list(model.named_parameters())  # shared (tied) parameters once, as DDP sees them
    backward = params[::-1]
    total = sum(p.numel() for _, p in params)
    gradient_bytes = sum(p.numel() * p.element_size() for _, p in params)
    if name in SEED_MS:
        compute_ms, compute_source = SEED_MS[name], SEED_SOURCE
    else:
        compute_ms = 6 * total * GPT_TOKENS / GPT_FLOPS * 1e3
        compute_source = f"estimate: 6 x parameters x {GPT_TOKENS} tokens at {GPT_FLOPS / 1e12:.0f} TFLOP/s"
    path = os.path.join(out_dir, f"{name}.csv")
    with open(path, "w", newline="") as f:
        f.write("# xtk-model-profile\n# format_version=1\n")
        f.write(f"# model={name}\n# source={source}, parameters in reverse registration order\n")
        f.write(f"# compute_ms={compute_ms:.1f}\n# forward_fraction={FORWARD_FRACTION:.4f}\n")
        f.write(f"# compute_source={compute_source}\n")
        f.write(f"# parameters={total}\n# gradient_bytes={gradient_bytes}\n")
        f.write("# generator=bench/collective/gen_profiles.py\n")
        with_weights = bool(weights)
        f.write("name,numel,dtype" + (",compute_weight" if with_weights else "") + "\n")
        rows = csv.writer(f, lineterminator="\n")
        for pname, p in backward:
            row = [pname, p.numel(), str(p.dtype).replace("torch.", "")]
            if with_weights:
                row.append(weights.get(id(p), 0))
            rows.writerow(row)
    known = params_table.get(name)
    check = "" if known is None else (" = params.csv" if known == total else f" != params.csv's {known}")
    print(f"{path}: {len(backward)} tensors, {total} parameters{check}, {gradient_bytes} gradient bytes, "
          f"compute {compute_ms:.1f} ms{'' if with_weights else ' (no FLOP weights)'}")
    return known is None or known == total


def read_params_table(path):
    table = {}
    if os.path.exists(path):
        with open(path) as f:
            for row in csv.reader(line for line in f if not line.startswith("#")):
                if row and row[0] != "model":
                    table[row[0]] = int(row[1])
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=["resnet50", "vgg16", "densenet161", "bert-large", *GPT2])
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "configs", "models"))
    p.add_argument("--params", default=os.path.join(os.path.dirname(__file__), "..", "..", "configs", "models",
                                                    "params.csv"),
                   help="parameter counts to check against (configs/models/params.csv)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    table = read_params_table(args.params)
    agree = all([write(name, args.out, table) for name in args.models])
    sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()
