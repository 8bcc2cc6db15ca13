"""Model-ready close to `import torch`: loading the shipped checkpoint must not pull in torch._dynamo."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from core_model import ModelConfig
from core_model.checkpoint_validation import expected_shapes

REPO = Path(__file__).resolve().parents[1]


def test_loading_the_shipped_model_does_not_import_torch_dynamo():
    code = ("import sys, torch\n"
            "from visualizer.workers.loader import load_startup_model\n"
            "startup = load_startup_model(None)\n"
            "assert startup.warning is None, startup.warning\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"  # importing it cost more than import torch itself (bench: model ready)


def test_the_shape_check_leaves_the_callers_random_stream_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    shapes = expected_shapes(ModelConfig())
    assert torch.equal(torch.rand(3), expected)
    assert shapes["src_embed.weight"] == torch.Size([ModelConfig().vocab_size, ModelConfig().d_model])
