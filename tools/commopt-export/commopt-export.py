#!/usr/bin/python3
"""Exports a PyTorch model's gradient profile (commopt-grad-profile v1).

Runs real forward and backward steps of a model on the CPU and records, with
autograd hooks, the order in which the parameters' gradients become ready and
how long each layer's forward and backward steps take. Writes the JSON that
`commopt-translate --import-grad-profile` reads (see DESIGN.md, "Gradient
profile, version 1").

    commopt-export.py resnet50 --batch-size 16 --steps 5 -o resnet50.json
    commopt-export.py mypkg.models:make_net --input-shape 3,32,32 -o net.json
    mpirun -np 4 commopt-export.py ...   # timed under 4 ranks' load; rank 0
                                         # writes the profile

A layer is a module that owns parameters directly. Its gradients are ready
when the last of its parameters' gradient hooks has fired; its backward time
is the time since the previous layer's gradients were ready (so the backward
of parameter-free modules in between, such as activations, is counted in the
next layer that owns parameters). Its forward time is, likewise, the time
from the end of the previous layer's forward to the end of its own. Every
layer carries its own `forward_us`, and `forward_us` at the top is their sum.
`update_us` is the optimizer's step (SGD with momentum) and the clearing of
the gradients, which follow the backward pass in a training step. Times are
medians over the measured steps.
"""

import argparse
import importlib
import json
import os
import statistics
import sys
import time


def fail(message):
    print(f"commopt-export: error: {message}", file=sys.stderr)
    sys.exit(2)


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def input_shape(text):
    try:
        shape = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of integers")
    if not shape or any(dim <= 0 for dim in shape):
        raise argparse.ArgumentTypeError(f"'{text}' has a non-positive size")
    return shape


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="commopt-export.py",
        description="Export a PyTorch model's gradient profile for commopt.")
    parser.add_argument(
        "model",
        help="a torchvision model name (resnet50, vgg16, alexnet, ...) or "
        "'module:factory', a function that returns an nn.Module")
    parser.add_argument("--batch-size", type=positive_int, default=8)
    parser.add_argument("--steps", type=positive_int, default=3,
                        help="measured steps (default 3)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="unmeasured steps first (default 1)")
    parser.add_argument("--input-shape", type=input_shape,
                        default=[3, 224, 224],
                        help="one sample's shape (default 3,224,224)")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--name", default=None,
                        help="the model's name in the profile")
    parser.add_argument("-o", "--output", default="-",
                        help="output file (default: standard output)")
    arguments = parser.parse_args(argv)
    if arguments.warmup < 0:
        parser.error(f"argument --warmup: {arguments.warmup} is negative")
    return arguments


def make_model(spec):
    """A torchvision model by name, or the result of module:factory()."""
    import torch
    import torchvision

    if ":" in spec:
        module_name, _, factory_name = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            fail(f"cannot import '{module_name}' for model '{spec}': {error}")
        factory = getattr(module, factory_name, None)
        if not callable(factory):
            fail(f"'{module_name}' has no callable '{factory_name}'")
        model = factory()
        if not isinstance(model, torch.nn.Module):
            fail(f"'{spec}' returned {type(model).__name__}, not an nn.Module")
        return model
    factory = getattr(torchvision.models, spec, None)
    if not spec.islower() or not callable(factory):
        fail(f"unknown model '{spec}': not a torchvision model name "
             "(e.g. resnet50, vgg16, alexnet) nor 'module:factory'")
    # weights=None: random weights, nothing is downloaded.
    return factory(weights=None)


class LayerRecorder:
    """Hooks that time each layer's forward and backward steps."""

    def __init__(self, model):
        self.layers = []  # (qualified name, module, [(param name, param)])
        for name, module in model.named_modules():
            params = [(f"{name}.{pname}" if name else pname, param)
                      for pname, param in module.named_parameters(
                          recurse=False) if param.requires_grad]
            if params:
                self.layers.append((name or type(module).__name__, module,
                                    params))
        self.forward_end = {}
        self.grad_ready = {}
        self.step_start = 0.0
        self.handles = []
        for index, (_, module, params) in enumerate(self.layers):
            self.handles.append(module.register_forward_hook(
                lambda *_, index=index: self._forward_done(index)))
            for pname, param in params:
                self.handles.append(param.register_hook(
                    lambda grad, pname=pname: self._grad_done(pname, grad)))

    def _forward_done(self, index):
        self.forward_end[index] = time.perf_counter()

    def _grad_done(self, pname, grad):
        self.grad_ready[pname] = time.perf_counter()
        return grad

    def start_step(self):
        self.forward_end.clear()
        self.grad_ready.clear()
        self.step_start = time.perf_counter()

    def remove(self):
        for handle in self.handles:
            handle.remove()


def run_steps(model, arguments):
    import torch

    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    model.train()
    recorder = LayerRecorder(model)
    if not recorder.layers:
        fail("the model has no trainable parameters")
    batch = torch.randn([arguments.batch_size] + arguments.input_shape)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    samples = []
    for step in range(arguments.warmup + arguments.steps):
        optimizer.zero_grad(set_to_none=True)
        recorder.start_step()
        try:
            output = model(batch)
        except Exception as error:
            fail(f"the model's forward pass failed on an input of shape "
                 f"{list(batch.shape)}: {error}")
        if isinstance(output, (tuple, list)):
            output = output[0]
        if hasattr(output, "logits"):
            output = output.logits
        # A surrogate loss: the gradients' shapes and the backward's work do
        # not depend on which scalar is differentiated.
        loss = output.float().square().mean()
        forward_done = time.perf_counter()
        loss.backward()
        backward_done = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        update_us = (time.perf_counter() - backward_done) * 1e6
        if step >= arguments.warmup:
            samples.append(sample_step(recorder, forward_done, backward_done) +
                           (update_us,))
    recorder.remove()
    return recorder.layers, samples


def sample_step(recorder, forward_done, backward_done):
    """One step's per-layer times (us) and the backward order of layers."""
    # Forward: from the end of the previous layer (in forward order) to the
    # end of this one; the tail after the last layer goes to the last.
    forward_order = sorted(recorder.forward_end, key=recorder.forward_end.get)
    forward_us = {}
    previous = recorder.step_start
    for index in forward_order:
        forward_us[index] = (recorder.forward_end[index] - previous) * 1e6
        previous = recorder.forward_end[index]
    if forward_order:
        forward_us[forward_order[-1]] += (forward_done - previous) * 1e6

    # Backward: a layer is ready when its last parameter's gradient is.
    ready = {}
    for index, (_, _, params) in enumerate(recorder.layers):
        times = [recorder.grad_ready.get(pname) for pname, _ in params]
        if None in times:
            missing = [pname for pname, _ in params
                       if pname not in recorder.grad_ready]
            fail(f"no gradient was computed for {', '.join(missing)}: "
                 "is the parameter used in the forward pass?")
        ready[index] = max(times)
    backward_order = sorted(ready, key=ready.get)
    backward_us = {}
    previous = forward_done
    for index in backward_order:
        backward_us[index] = (ready[index] - previous) * 1e6
        previous = ready[index]
    return forward_us, backward_us, backward_order, \
        (backward_done - forward_done) * 1e6


DTYPES = {"torch.float32": "f32", "torch.float16": "f16",
          "torch.bfloat16": "bf16", "torch.float64": "f64"}


def build_profile(name, layers, samples):
    # The backward order of the median step is stable in practice; take the
    # order of the last step and the medians of every layer's times.
    order = samples[-1][2]
    profile_layers = []
    for index in order:
        layer_name, _, params = layers[index]
        forward = statistics.median(s[0].get(index, 0.0) for s in samples)
        backward = statistics.median(s[1][index] for s in samples)
        entry_params = []
        for pname, param in params:
            dtype = DTYPES.get(str(param.dtype))
            if dtype is None:
                fail(f"parameter {pname} has dtype {param.dtype}, which the "
                     "profile format does not know")
            entry_params.append({"name": pname, "shape": list(param.shape),
                                 "dtype": dtype})
        profile_layers.append({"name": layer_name,
                               "forward_us": round(max(forward, 0.0), 3),
                               "backward_us": round(max(backward, 0.0), 3),
                               "params": entry_params})
    return {
        "format": "commopt-grad-profile",
        "version": 1,
        "model": name,
        "forward_us": round(sum(l["forward_us"] for l in profile_layers), 3),
        "update_us": round(statistics.median(s[4] for s in samples), 3),
        "layers": profile_layers,
    }


def main(argv):
    arguments = parse_arguments(argv)
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as error:
        fail(f"{error}: install Debian's python3-torch and python3-torchvision "
             "and run with /usr/bin/python3")
    model = make_model(arguments.model)
    layers, samples = run_steps(model, arguments)
    name = arguments.name or arguments.model.rpartition(":")[2]
    profile = build_profile(name, layers, samples)
    text = json.dumps(profile, indent=1) + "\n"
    # Under mpirun every rank measures, so that the layers are timed under
    # the load of a data-parallel job on this machine; rank 0 writes.
    if os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK",
                                                             "0")) != "0":
        return
    if arguments.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(arguments.output, "w") as output:
                output.write(text)
        except OSError as error:
            fail(f"cannot write {arguments.output}: {error}")


if __name__ == "__main__":
    main(sys.argv[1:])
