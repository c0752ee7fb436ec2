"""train.py's parameters_identical, on two simulated ranks: every rank's
all-sum is its own values plus the other's. Equal models must agree; models
that differ in one bit of one parameter must not."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples",
                                "fashion_mnist"))
import train  # noqa: E402


class Recorder:
    """A sync of one rank that keeps what it was asked to sum."""
    size = 1

    def all_sum(self, values):
        self.values = values
        return values


class TwoRanks:
    """A sync of two ranks whose other rank contributed `other`."""
    size = 2

    def __init__(self, other):
        self.other = other

    def all_sum(self, values):
        return [a + b for a, b in zip(values, self.other)]


def contribution(model):
    recorder = Recorder()
    train.parameters_identical(model, recorder)
    return recorder.values


torch.manual_seed(0)
model = torch.nn.Linear(5, 3)
same = torch.nn.Linear(5, 3)
same.load_state_dict(model.state_dict())
differs = torch.nn.Linear(5, 3)
differs.load_state_dict(model.state_dict())
with torch.no_grad():
    bits = differs.weight.view(-1)[7:8].view(torch.int32)
    bits ^= 1

print("same:", train.parameters_identical(model, TwoRanks(contribution(same))))
print("one bit apart:",
      train.parameters_identical(model, TwoRanks(contribution(differs))))
