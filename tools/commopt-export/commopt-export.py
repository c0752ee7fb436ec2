#!/usr/bin/python3
"""Exports a PyTorch model's gradient profile (commopt-grad-profile v1).

Runs real forward and backward steps of a model on the CPU and records, with
autograd hooks, the order in which the parameters' gradients become ready and
how long each layer's forward and backward steps take. Writes the JSON that
`commopt-translate --import-grad-profile` reads (the format is described in
docs/GradProfile.md).

    commopt-export.py resnet50 --batch-size 16 --steps 5 -o resnet50.json
    commopt-export.py mypkg.models:make_net --input-shape 3,32,32 -o net.json
    commopt-export.py lm:make_lm --example-inputs lm:token_ids \\
        --loss lm:next_token_loss --dtype bf16 -o lm.json
    mpirun -np 4 commopt-export.py ...   # timed under 4 ranks' load; rank 0
                                         # writes the profile

The model is a torchvision model name (random weights, nothing is
downloaded) or 'module:factory', a function without arguments that returns
an nn.Module. The current directory is searched for the module before
PYTHONPATH, as with `python3 -m`.

Inputs. By default the model gets one random tensor of shape
[--batch-size] + --input-shape in the dtype of its parameters.
`--example-inputs module:function` names a function(batch_size) that returns
the model's inputs instead: a tensor, called as model(x); a tuple or list,
called as model(*inputs); or a dict, called as model(**inputs). That is how
models that take token ids (nn.Embedding) or several inputs are exported.
Floating-point tensors among the inputs are converted to the model's dtype;
other tensors (token ids, masks) are passed as they are.

Loss. `--loss module:function` names a function(output, inputs) that returns
the scalar loss to differentiate, given the model's output and the inputs
as --example-inputs returned them (the input tensor by default). Without
it, the loss is a surrogate: the sum of mean(square(t)) over every
floating-point tensor t in the output, however it is nested (tensors,
tuples, lists, named tuples, dicts, dataclasses, objects with a `.logits`).
Which scalar is differentiated does not change the gradients' shapes nor
much of the backward's work, but every output must take part: a parameter
that only a second output depends on (an auxiliary head) would otherwise
get no gradient.

Precision. `--dtype f32|f16|bf16` converts the model (model.to(dtype)) and
its default input; without it the model keeps its own dtype. The profile
gives every parameter its dtype. PyTorch's CPU kernels lack many f16
operations (bf16 is better covered): such a failure is reported with the
dtype and the failing operation.

Layers and times. A layer is a module that owns parameters directly. Its
gradients are ready when the last of its parameters' gradient hooks has
fired; its backward time is the time since the previous layer's gradients
were ready (so the backward of parameter-free modules in between, such as
activations, is counted in the next layer that owns parameters). Its
forward time is, likewise, the time from the end of the previous layer's
forward to the end of its own. Every layer carries its own `forward_us`,
and `forward_us` at the top is their sum. `update_us` is the optimizer's
step (SGD, with the momentum of --momentum, 0.9 unless told) and the
clearing of the gradients, which follow the backward pass in a training
step. Times are medians over the measured steps; the layers are listed
in the backward order of the last one.

Work. Each layer also carries its floating-point operations and the bytes
it moves, forward and backward (`forward_flops`, `backward_flops`,
`forward_bytes`, `backward_bytes`), counted from the shapes the modules see
in the first step by forward hooks, so that `commopt-translate
--grad-profile-device` can replace the CPU's times by a GPU's roofline. A
multiply-add is 2 FLOPs. Counted are convolutions (2 x output elements x
input channels per group x kernel size, plus the bias), nn.Linear
(2 x output elements x in_features, plus the bias), normalisations
(BatchNorm, LayerNorm, GroupNorm, InstanceNorm: 5 FLOPs per element),
nn.MultiheadAttention (its input and output projections and the two
attention matmuls, 2 x batch x query length x key length x embed_dim each;
nn.TransformerEncoderLayer is counted through these pieces and its Linear
and LayerNorm modules) and embeddings (bytes only); pooling, activations
and dropout move bytes but count no FLOPs. Work outside modules (a
residual addition, torch.flatten, the loss) is not counted, nor the work
of a layer of another kind (nn.LSTM, a module that uses its parameters in
functional calls): the summary names such layers. Bytes are a
roofline estimate of the memory traffic: forward, the inputs and outputs
plus the parameters read (an embedding reads only the rows it gathers);
backward reads the output gradient, the inputs and the parameters and
writes the input and parameter gradients: outputs + 2 x inputs +
2 x parameters. Backward FLOPs are 2 x forward FLOPs (one product for the
input gradient, one for the weight gradient). The work is attributed as the
times are: a layer's forward counts the parameter-free modules since the
previous layer's forward, its backward those after it up to the next layer
(whose backward runs before its own). The header's `update_flops` and
`update_bytes` are those of the optimizer's step (SGD with momentum: 4 FLOPs
per element; parameter, gradient and momentum read, parameter and momentum
written; with --momentum 0: 2 FLOPs, parameter and gradient read, parameter
written).

Shared parameters. A tensor that several modules hold (tied embeddings:
`dec.weight = enc.weight`) has one gradient, accumulated over its uses, so
it is listed once: under its first name in `model.named_parameters()` order
(the name that torch, and so commopt.DistributedOptimizer, knows it by),
with its other names in the param's `aliases`. It belongs to the layer of
its first owner, the module that holds it under that name. Its gradient
hook fires once, when the gradients of all its uses have been summed, so
that layer is ready no earlier than the backward of the tensor's last use.
For the usual tying (the embedding registered before the output
projection) the first owner is the embedding, whose backward runs last
anyway. A module all of whose parameters belong to other layers is no layer
of its own: its times count in its neighbours', like an activation's.

Unused parameters. A parameter that gets no gradient in some measured step
(a branch not taken, a head that no output uses) is marked `"unused": true`
and treated as ready at the end of backward, when
commopt.DistributedOptimizer reduces such gradients as zeros. The unused
parameters come after every other layer in backward order, with a
backward time of 0: a layer whose parameters are all unused moves there as
a whole (keeping its forward time, if its forward ran); a layer with used
parameters too keeps those where they are, and its unused ones follow at
the end in an entry of the same name with forward and backward times of 0.
A note on standard error names them.

Gradients that are sparse by nature. An embedding's gradient touches only
the rows its batch used. After the measured steps the exporter runs one
more forward and backward pass and looks at every parameter's gradient: a
sparse COO gradient (nn.Embedding(sparse=True)), or a dense one whose
nonzero rows (along the first dimension) are at most half of its rows,
makes the parameter a candidate. It then runs --sparse-ranks passes in all
(a power of two, default 16; 0 skips this), each on a new batch from
--example-inputs (which should draw a new one per call), standing for the
batches of that many ranks, and records per candidate the mean fraction
of rows that 1, 2, 4, ... consecutive passes touch together: the param's
`"sparse": {"rows_touched": [...], "coo": true|false}` (docs/GradProfile.md),
with which commopt prices the lossless exchange of the touched rows. A
parameter whose fraction reaches 1/2 on one pass is left dense. These passes
are not timed.

Totals. The profile's header gives `num_layers`, `num_params` (each
parameter once, aliases aside) and `num_elements` (over those parameters),
which the importer checks against the layers, so that a profile cut short
or merged wrongly is an error rather than a smaller model.

Progress goes to standard error (the model built, each step's time, a
summary at the end) unless --quiet; notes and errors are printed either
way. Under mpirun only rank 0 prints progress and notes and writes the
profile.
"""

import argparse
import collections.abc
import dataclasses
import importlib
import json
import math
import os
import statistics
import sys
import time


def fail(message):
    print(f"commopt-export: error: {message}", file=sys.stderr)
    sys.exit(2)


def is_rank0():
    """Whether this process writes: rank 0 under mpirun, or alone."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK",
                          os.environ.get("PMI_RANK", "0"))
    return rank == "0"


class Reporter:
    """Progress and notes on standard error, from rank 0 only."""

    def __init__(self, quiet):
        self.show_progress = not quiet and is_rank0()
        self.show_notes = is_rank0()

    def progress(self, message):
        if self.show_progress:
            print(f"commopt-export: {message}", file=sys.stderr, flush=True)

    def note(self, message):
        if self.show_notes:
            print(f"commopt-export: note: {message}", file=sys.stderr,
                  flush=True)


# -- arguments ----------------------------------------------------------------

# The dtypes of --dtype and of the profile, by their torch names.
DTYPE_CHOICES = ("f32", "f16", "bf16")
DTYPES = {"torch.float32": "f32", "torch.float16": "f16",
          "torch.bfloat16": "bf16", "torch.float64": "f64"}


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number")
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number >= 0")
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


def function_spec(text):
    module_name, colon, function_name = text.partition(":")
    if not colon or not module_name or not function_name:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not 'module:function'")
    return text


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="commopt-export.py",
        description="Export a PyTorch model's gradient profile for commopt.")
    parser.add_argument(
        "model",
        help="a torchvision model name (resnet50, vgg16, alexnet, ...) or "
        "'module:factory', a function that returns an nn.Module")
    parser.add_argument("--batch-size", type=positive_int, default=8,
                        help="samples per step (default 8)")
    parser.add_argument("--steps", type=positive_int, default=3,
                        help="measured steps (default 3)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="unmeasured steps first (default 1)")
    inputs = parser.add_mutually_exclusive_group()
    inputs.add_argument("--input-shape", type=input_shape,
                        default=[3, 224, 224],
                        help="one sample's shape, for a random input in the "
                        "model's dtype (default 3,224,224)")
    inputs.add_argument(
        "--example-inputs", type=function_spec, metavar="MODULE:FUNCTION",
        help="function(batch_size) returning the model's inputs: a tensor, "
        "a tuple of positional inputs or a dict of keyword inputs")
    parser.add_argument(
        "--loss", type=function_spec, metavar="MODULE:FUNCTION",
        help="function(output, inputs) returning the scalar loss (default: "
        "a surrogate over every floating-point output)")
    parser.add_argument(
        "--dtype", choices=DTYPE_CHOICES, default=None,
        help="convert the model and its floating-point inputs to this dtype "
        "(default: the model's own)")
    parser.add_argument(
        "--sparse-ranks", type=int, default=16,
        help="passes that sample the rows a gradient that is sparse by "
        "nature touches on 1, 2, 4, ... ranks; a power of two, 0 to skip "
        "(default 16)")
    parser.add_argument(
        "--momentum", type=non_negative_float, default=0.9,
        help="the momentum of the timed optimizer's step, SGD's (default "
        "0.9; 0 for plain SGD, whose step on a sparse gradient touches only "
        "its rows)")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--name", default=None,
                        help="the model's name in the profile")
    parser.add_argument("-o", "--output", default="-",
                        help="output file (default: standard output)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print no progress (notes and errors still)")
    arguments = parser.parse_args(argv)
    if arguments.warmup < 0:
        parser.error(f"argument --warmup: {arguments.warmup} is negative")
    ranks = arguments.sparse_ranks
    if ranks < 0 or (ranks & (ranks - 1)) != 0:
        parser.error(f"argument --sparse-ranks: {ranks} is not 0 or a power "
                     "of two")
    return arguments


# -- the model, its inputs and its loss ---------------------------------------

def import_function(spec, what):
    """The callable that 'module:name' names, for `what` (in errors)."""
    module_name, _, function_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            fail(f"cannot import '{module_name}' for {what} '{spec}': "
                 f"{error}; the module must be importable: run from the "
                 "directory that contains it or add that directory to "
                 "PYTHONPATH")
        fail(f"cannot import '{module_name}' for {what} '{spec}': {error} "
             f"(raised while importing '{module_name}')")
    except Exception as error:
        fail(f"cannot import '{module_name}' for {what} '{spec}': "
             f"{type(error).__name__}: {error}")
    function = getattr(module, function_name, None)
    if not callable(function):
        fail(f"'{module_name}' has no callable '{function_name}'")
    return function


def make_model(spec):
    """A torchvision model by name, or the result of module:factory()."""
    import torch
    import torchvision

    if ":" in spec:
        factory = import_function(spec, "model")
        try:
            model = factory()
        except Exception as error:
            fail(f"'{spec}' failed: {type(error).__name__}: {error}")
        if not isinstance(model, torch.nn.Module):
            fail(f"'{spec}' returned {type(model).__name__}, not an nn.Module")
        return model
    factory = getattr(torchvision.models, spec, None)
    if not spec.islower() or not callable(factory):
        fail(f"unknown model '{spec}': not a torchvision model name "
             "(e.g. resnet50, vgg16, alexnet) nor 'module:factory'")
    # weights=None: random weights, nothing is downloaded.
    return factory(weights=None)


def set_dtype(model, dtype_name):
    """Converts the model to `dtype_name` if given; returns the model's
    dtype: that of its first floating-point parameter (f32 if none)."""
    import torch

    if dtype_name is not None:
        model.to({"f32": torch.float32, "f16": torch.float16,
                  "bf16": torch.bfloat16}[dtype_name])
    for param in model.parameters():
        if param.is_floating_point():
            return param.dtype
    return torch.float32


def dtype_name(dtype):
    """The profile's name of a dtype (f32, bf16, ...), or torch's (int64)."""
    return DTYPES.get(str(dtype), str(dtype).replace("torch.", ""))


def convert_floats(value, dtype):
    """`value` with its floating-point tensors, however nested in tuples,
    lists and dicts, converted to `dtype`."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, dict):
        return {key: convert_floats(item, dtype)
                for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(convert_floats(item, dtype) for item in value)
    return value


def describe(value):
    """A short description of inputs: their tensors' shapes and dtypes."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor {list(value.shape)} {dtype_name(value.dtype)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {describe(item)}"
                               for key, item in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe(item) for item in value) + ")"
    return type(value).__name__


def make_inputs(arguments, dtype):
    """The model's inputs: what --example-inputs returns, or a random
    tensor of --input-shape."""
    import torch

    if arguments.example_inputs is None:
        return torch.randn([arguments.batch_size] + arguments.input_shape,
                           dtype=dtype)
    spec = arguments.example_inputs
    function = import_function(spec, "--example-inputs")
    try:
        inputs = function(arguments.batch_size)
    except Exception as error:
        fail(f"--example-inputs '{spec}' failed: "
             f"{type(error).__name__}: {error}")
    if not isinstance(inputs, (torch.Tensor, tuple, list, dict)):
        fail(f"--example-inputs '{spec}' returned {type(inputs).__name__}, "
             "not a tensor, a tuple of inputs or a dict of keyword inputs")
    return convert_floats(inputs, dtype)


def call_model(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def floating_outputs(output):
    """The floating-point tensors of a model's output that depend on its
    parameters, however nested, each once."""
    import torch

    found = {}

    def visit(value):
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() and value.requires_grad:
                found.setdefault(id(value), value)
        elif isinstance(value, collections.abc.Mapping):
            for item in value.values():
                visit(item)
        elif isinstance(value, (tuple, list)):
            for item in value:
                visit(item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                visit(getattr(value, field.name))
        elif hasattr(value, "logits"):
            visit(value.logits)

    visit(output)
    return list(found.values())


def surrogate_loss(output):
    """The sum of mean(square(t)) over the floating-point outputs."""
    tensors = floating_outputs(output)
    if not tensors:
        fail("the model's output has no floating-point tensor that depends "
             "on its parameters: give --loss MODULE:FUNCTION")
    return sum(t.float().square().mean() for t in tensors)


# -- layers, parameters and their hooks ---------------------------------------

@dataclasses.dataclass
class Param:
    name: str  # the first name in model.named_parameters()
    tensor: object
    aliases: list  # its other names, in model order


@dataclasses.dataclass
class Layer:
    name: str
    module: object
    params: list  # of Param


def collect_layers(model):
    """The model's layers, in model order: the modules that own trainable
    parameters under their first names (see the module's docstring)."""
    names = {}  # id(tensor) -> its first name
    for name, param in model.named_parameters():
        if param.requires_grad:
            names.setdefault(id(param), name)
    # Every name of every tensor: the modules under each of their names,
    # and every attribute of a module (named_parameters() gives a tensor
    # once per module, _parameters under each attribute).
    aliases = {key: [] for key in names}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for pname, param in module._parameters.items():
            full = f"{prefix}.{pname}" if prefix else pname
            if param is not None and id(param) in names and \
                    full != names[id(param)] and \
                    full not in aliases[id(param)]:
                aliases[id(param)].append(full)
    layers = []
    for prefix, module in model.named_modules():
        params = []
        for pname, param in module.named_parameters(recurse=False):
            full = f"{prefix}.{pname}" if prefix else pname
            if names.get(id(param)) == full:
                params.append(Param(full, param, aliases[id(param)]))
        if params:
            layers.append(Layer(prefix or type(module).__name__, module,
                                params))
    return layers


@dataclasses.dataclass
class StepSample:
    """One measured step's times (perf_counter seconds, or us)."""
    forward_us: dict  # layer index -> forward time (us) of layers that ran
    grad_ready: dict  # param name -> when its gradient was ready
    forward_done: float
    update_us: float


class Recorder:
    """Hooks that time each layer's forward and each gradient: one forward
    hook per layer, one gradient hook per parameter tensor."""

    def __init__(self, layers):
        self.forward_end = {}
        self.grad_ready = {}
        self.step_start = 0.0
        self.handles = []
        for index, layer in enumerate(layers):
            self.handles.append(layer.module.register_forward_hook(
                lambda *_, index=index: self._forward_done(index)))
            for param in layer.params:
                self.handles.append(param.tensor.register_hook(
                    lambda grad, name=param.name: self._grad_done(name, grad)))

    def _forward_done(self, index):
        self.forward_end[index] = time.perf_counter()

    def _grad_done(self, name, grad):
        self.grad_ready[name] = time.perf_counter()
        return grad

    def start_step(self):
        self.forward_end.clear()
        self.grad_ready.clear()
        self.step_start = time.perf_counter()

    def sample(self, forward_done, update_us):
        """This step's record. Forward: from the end of the previous layer
        (in forward order) to the end of this one; the tail after the last
        layer (the loss) goes to the last."""
        forward_order = sorted(self.forward_end, key=self.forward_end.get)
        forward_us = {}
        previous = self.step_start
        for index in forward_order:
            forward_us[index] = (self.forward_end[index] - previous) * 1e6
            previous = self.forward_end[index]
        if forward_order:
            forward_us[forward_order[-1]] += (forward_done - previous) * 1e6
        return StepSample(forward_us, dict(self.grad_ready), forward_done,
                          update_us)

    def remove(self):
        for handle in self.handles:
            handle.remove()


# -- FLOPs and bytes ----------------------------------------------------------

# FLOPs per element of a normalisation: its statistics, the normalisation
# and the affine scale and shift.
NORM_FLOPS_PER_ELEMENT = 5
# The optimizer's step per parameter element, SGD with momentum: FLOPs,
# and elements read or written (parameter, gradient and momentum read;
# parameter and momentum written); and without momentum (parameter and
# gradient read, parameter written).
UPDATE_FLOPS_PER_ELEMENT = {True: 4, False: 2}
UPDATE_ACCESSES_PER_ELEMENT = {True: 5, False: 3}


def tensors_of(value):
    """The tensors in `value`, however nested in tuples, lists and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, collections.abc.Mapping):
        return [t for item in value.values() for t in tensors_of(item)]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_of(item)]
    return []


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclasses.dataclass
class Work:
    """Floating-point operations and bytes moved by one forward and its
    backward."""
    forward_flops: int = 0
    forward_bytes: int = 0
    backward_flops: int = 0
    backward_bytes: int = 0


def counted_kinds():
    """The module types whose work is counted, each with a function
    (module, inputs, output) -> (forward FLOPs, extra forward bytes)."""
    from torch import nn

    def conv(module, inputs, output):
        kernel = math.prod(module.kernel_size)
        per_output = module.in_channels // module.groups * kernel
        return 2 * output.numel() * per_output + \
            (output.numel() if module.bias is not None else 0), 0

    def conv_transpose(module, inputs, output):
        kernel = math.prod(module.kernel_size)
        per_input = module.out_channels // module.groups * kernel
        return 2 * inputs[0].numel() * per_input + \
            (output.numel() if module.bias is not None else 0), 0

    def linear(module, inputs, output):
        return 2 * output.numel() * module.in_features + \
            (output.numel() if module.bias is not None else 0), 0

    def norm(module, inputs, output):
        return NORM_FLOPS_PER_ELEMENT * output.numel(), 0

    def bytes_only(module, inputs, output):
        return 0, 0

    def attention(module, inputs, output):
        # query, key, value: (L, N, E) or (N, L, E) with batch_first, or
        # unbatched (L, E). A forward hook sees positional inputs only:
        # called with keywords, the module's work is not counted.
        if len(inputs) < 3:
            return 0, 0
        query, key = inputs[:2]
        embed = module.embed_dim
        queries = query.numel() // embed  # batch x query length
        keys = key.numel() // module.kdim  # batch x key length
        batch = 1 if query.dim() == 2 else \
            query.shape[0 if module.batch_first else 1]
        flops = 2 * queries * embed * embed  # query projection
        flops += 2 * keys * (module.kdim + module.vdim) * embed  # key, value
        # Q K^T and the weighted sum of the values, over all heads.
        flops += 2 * 2 * queries * (keys // batch) * embed
        flops += 2 * queries * embed * embed  # output projection
        # The attention matrix: written, read and written by the softmax,
        # read by the product with the values.
        scores = batch * module.num_heads * (queries // batch) * \
            (keys // batch)
        return flops, 4 * scores * query.element_size()

    return [
        ((nn.Conv1d, nn.Conv2d, nn.Conv3d), conv),
        ((nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d),
         conv_transpose),
        ((nn.Linear,), linear),
        ((nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
          nn.modules.instancenorm._InstanceNorm), norm),
        ((nn.MultiheadAttention,), attention),
        ((nn.Embedding, nn.EmbeddingBag), bytes_only),
        ((nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd,
          nn.modules.pooling._AdaptiveAvgPoolNd,
          nn.modules.pooling._AdaptiveMaxPoolNd,
          nn.modules.dropout._DropoutNd, nn.ReLU, nn.ReLU6, nn.LeakyReLU,
          nn.PReLU, nn.ELU, nn.SELU, nn.GELU, nn.SiLU, nn.Mish, nn.Sigmoid,
          nn.Tanh, nn.Hardswish, nn.Hardsigmoid, nn.Hardtanh, nn.Softmax,
          nn.LogSoftmax), bytes_only),
    ]


def module_work(module, count, inputs, output):
    """The work of one call of a counted module (see the module's
    docstring for the rules)."""
    from torch import nn

    flops, extra = count(module, inputs, output)
    input_bytes = nbytes(tensors_of(inputs))
    output_bytes = nbytes(tensors_of(output))
    if isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
        # Forward reads the rows it gathers (as many bytes as it writes);
        # backward reads the output gradient and the ids and writes the
        # whole table's gradient.
        table = nbytes([module.weight])
        return Work(0, input_bytes + 2 * output_bytes, 0,
                    output_bytes + input_bytes + table)
    param_bytes = nbytes(list(module.parameters()))
    return Work(flops, input_bytes + output_bytes + param_bytes + extra,
                2 * flops,
                output_bytes + 2 * input_bytes + 2 * param_bytes + 2 * extra)


class WorkCounter:
    """Forward hooks that count each layer's work in one step: one hook per
    counted module and per layer, which records the module's work and, for
    a layer, the end of its forward."""

    def __init__(self, model, layers):
        kinds = counted_kinds()
        layer_of = {id(layer.module): index
                    for index, layer in enumerate(layers)}
        self.events = []  # ("work", Work, layer index or None), ("end", i)
        self.handles = []
        for module in model.modules():
            count = next((function for types, function in kinds
                          if isinstance(module, types)), None)
            layer = layer_of.get(id(module))
            if count is None and layer is None:
                continue
            self.handles.append(module.register_forward_hook(
                lambda module, inputs, output, count=count, layer=layer:
                self._record(module, count, layer, inputs, output)))

    def _record(self, module, count, layer, inputs, output):
        if count is not None:
            self.events.append(
                ("work", module_work(module, count, inputs, output), layer))
        if layer is not None:
            self.events.append(("end", layer))

    def remove(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def layer_work(self, count):
        """Each of the `count` layers' Work, attributed as the times are:
        forward, to the next layer whose forward ends; backward, to the
        module's own layer or, for a parameter-free module, to the last
        layer whose forward ended before it (its backward runs after the
        next layer's and before that one's gradients are ready)."""
        work = [Work() for _ in range(count)]
        pending = Work()  # forward work since the last layer's end
        last = None
        for event in self.events:
            if event[0] == "end":
                last = event[1]
                work[last].forward_flops += pending.forward_flops
                work[last].forward_bytes += pending.forward_bytes
                pending = Work()
                continue
            _, counted, layer = event
            pending.forward_flops += counted.forward_flops
            pending.forward_bytes += counted.forward_bytes
            owner = layer if layer is not None else last
            if owner is not None:
                work[owner].backward_flops += counted.backward_flops
                work[owner].backward_bytes += counted.backward_bytes
        # What runs after the last layer (the tail) goes to it, as its time.
        if last is not None:
            work[last].forward_flops += pending.forward_flops
            work[last].forward_bytes += pending.forward_bytes
        return work


# -- the training steps -------------------------------------------------------

def half_precision_error(stage, error, dtype):
    """The message for an `error` of `stage` (e.g. "forward pass") that
    looks like a CPU kernel missing in a half-precision `dtype`; None for
    other errors."""
    import torch

    text = str(error).strip()
    torch_name = {torch.float16: "'Half'", torch.bfloat16: "'BFloat16'"}
    if dtype not in torch_name or ("not implemented for" not in text and
                                   torch_name[dtype] not in text):
        return None
    name = dtype_name(dtype)
    alternatives = "--dtype bf16 (better supported on the CPU) or " \
        "--dtype f32" if name == "f16" else "--dtype f32"
    return (f"the model's {stage} failed in {name}: {text}: PyTorch "
            f"{torch.__version__}'s CPU kernels lack this operation in "
            f"{name}; try {alternatives}")


def step_failed(stage, error, dtype, where=""):
    """Fails with the error of `stage` (e.g. "forward pass")."""
    fail(half_precision_error(stage, error, dtype) or
         f"the model's {stage} failed{where}: {error}")


def input_description(model, arguments, inputs):
    """Where a forward pass failed: on which inputs."""
    import torch

    if arguments.example_inputs is not None:
        return (f" on the inputs of --example-inputs "
                f"'{arguments.example_inputs}', {describe(inputs)}")
    where = f" on an input of shape {list(inputs.shape)}"
    if any(isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))
           for m in model.modules()):
        where += (" (a random float tensor: a model that takes token ids "
                  "needs --example-inputs MODULE:FUNCTION)")
    return where


def run_steps(model, layers, dtype, arguments, reporter):
    """Runs the warmup and measured steps; returns the measured samples and
    each layer's Work."""
    import torch

    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    model.train()
    inputs = make_inputs(arguments, dtype)
    loss_function = None
    if arguments.loss is not None:
        loss_function = import_function(arguments.loss, "--loss")
    recorder = Recorder(layers)
    # The work is the same in every step: counted in the first (a warmup
    # step unless --warmup 0), whose forward alone carries the counter's
    # hooks.
    counter = WorkCounter(model, layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01,
                                momentum=arguments.momentum)
    total = arguments.warmup + arguments.steps
    reporter.progress(
        f"running {arguments.warmup} warmup and "
        f"{plural(arguments.steps, 'measured step')} on {describe(inputs)}")

    samples = []
    for step in range(total):
        optimizer.zero_grad(set_to_none=True)
        recorder.start_step()
        try:
            output = call_model(model, inputs)
        except Exception as error:
            step_failed("forward pass", error, dtype,
                        input_description(model, arguments, inputs))
        loss = compute_loss(loss_function, arguments.loss, output, inputs,
                            dtype)
        forward_done = time.perf_counter()
        if step == 0:
            counter.remove()
        try:
            loss.backward()
        except Exception as error:
            step_failed("backward pass", error, dtype)
        backward_done = time.perf_counter()
        try:
            optimizer.step()
        except Exception as error:
            step_failed("optimizer step", error, dtype)
        optimizer.zero_grad(set_to_none=True)
        update_us = (time.perf_counter() - backward_done) * 1e6
        warmup = step < arguments.warmup
        if not warmup:
            samples.append(recorder.sample(forward_done, update_us))
        reporter.progress(
            f"step {step + 1}/{total}{' (warmup)' if warmup else ''} "
            f"{duration(time.perf_counter() - recorder.step_start)}")
    recorder.remove()
    return samples, counter.layer_work(len(layers))


# A gradient whose nonzero rows are at most this fraction of its rows in a
# pass is a candidate for the lossless rows exchange.
SPARSE_ROWS_LIMIT = 0.5


def touched_rows(grad):
    """The rows (first dimension) of `grad` that hold a nonzero entry, as a
    boolean tensor: a COO gradient's indices, a dense one's nonzero rows."""
    import torch

    rows = grad.shape[0]
    if grad.is_sparse:
        mask = torch.zeros(rows, dtype=torch.bool)
        grad = grad.coalesce()
        values = grad.values().reshape(grad.values().shape[0], -1)
        mask[grad.indices()[0][(values != 0).any(dim=1)]] = True
        return mask
    return (grad.detach().reshape(rows, -1) != 0).any(dim=1).cpu()


def sample_rows_touched(model, layers, dtype, arguments, reporter):
    """{param name: {"rows_touched": [...], "coo": bool}} for the
    parameters whose gradients are sparse by nature (see the module
    comment)."""
    import torch

    passes = arguments.sparse_ranks
    if passes == 0:
        return {}
    loss_function = None
    if arguments.loss is not None:
        loss_function = import_function(arguments.loss, "--loss")
    params = [p for layer in layers for p in layer.params
              if p.tensor.dim() >= 1]
    masks = {}
    coo = {}
    for index in range(passes):
        model.zero_grad(set_to_none=True)
        inputs = make_inputs(arguments, dtype)
        output = call_model(model, inputs)
        compute_loss(loss_function, arguments.loss, output, inputs,
                     dtype).backward()
        for param in params:
            grad = param.tensor.grad
            if index and param.name not in masks:
                continue
            if grad is None:
                masks.pop(param.name, None)
                continue
            mask = touched_rows(grad)
            if index == 0:
                fraction = mask.float().mean().item()
                if not grad.is_sparse and fraction > SPARSE_ROWS_LIMIT:
                    continue
                masks[param.name] = []
                coo[param.name] = bool(grad.is_sparse)
            masks[param.name].append(mask)
        if not masks:
            break
    model.zero_grad(set_to_none=True)
    found = {}
    for name, per_pass in masks.items():
        fractions = []
        group = 1
        while group <= len(per_pass):
            unions = [torch.stack(per_pass[i:i + group]).any(dim=0)
                      for i in range(0, len(per_pass) - group + 1, group)]
            fractions.append(statistics.mean(
                max(u.float().mean().item(), 1.0 / u.numel())
                for u in unions))
            group *= 2
        # Rounded up to the profile's precision, and never less than fewer
        # ranks touched (the means of different groups may dip).
        rounded = []
        for fraction in fractions:
            value = math.ceil(fraction * 1e6) / 1e6
            rounded.append(max([value] + rounded[-1:]))
        found[name] = {"rows_touched": rounded, "coo": coo[name]}
    if found:
        reporter.progress(
            f"{plural(len(found), 'gradient')} sparse by nature: " +
            ", ".join(f"{name} ({entry['rows_touched'][0]:.2%} of rows per "
                      f"rank, {entry['rows_touched'][-1]:.2%} on "
                      f"{2 ** (len(entry['rows_touched']) - 1)})"
                      for name, entry in found.items()))
    return found


def compute_loss(loss_function, spec, output, inputs, dtype):
    """The scalar to differentiate: --loss's, or the surrogate."""
    import torch

    if loss_function is None:
        return surrogate_loss(output)
    try:
        loss = loss_function(output, inputs)
    except Exception as error:
        fail(half_precision_error(f"loss ('{spec}')", error, dtype) or
             f"--loss '{spec}' failed: {type(error).__name__}: {error}")
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        what = f"a tensor of shape {list(loss.shape)}" \
            if isinstance(loss, torch.Tensor) else type(loss).__name__
        fail(f"--loss '{spec}' returned {what}, not a scalar tensor")
    if not loss.requires_grad:
        fail(f"the loss of --loss '{spec}' does not depend on the model's "
             "parameters")
    return loss


# -- the profile --------------------------------------------------------------

def unused_params(layers, samples):
    """The names of the parameters that got no gradient in some measured
    step."""
    return {param.name for layer in layers for param in layer.params
            if any(param.name not in s.grad_ready for s in samples)}


def backward_times(layers, unused, sample):
    """The backward order of the layers with used parameters in `sample`,
    and each one's backward time (us): a layer is ready when its last used
    parameter's gradient is."""
    ready = {}
    for index, layer in enumerate(layers):
        times = [sample.grad_ready[p.name] for p in layer.params
                 if p.name not in unused]
        if times:
            ready[index] = max(times)
    order = sorted(ready, key=ready.get)
    backward_us = {}
    previous = sample.forward_done
    for index in order:
        backward_us[index] = (ready[index] - previous) * 1e6
        previous = ready[index]
    return order, backward_us


def param_entry(param, unused, sparse):
    dtype = DTYPES.get(str(param.tensor.dtype))
    if dtype is None:
        fail(f"parameter {param.name} has dtype {param.tensor.dtype}, which "
             "the profile format does not know")
    entry = {"name": param.name, "shape": list(param.tensor.shape),
             "dtype": dtype}
    if param.aliases:
        entry["aliases"] = list(param.aliases)
    if param.name in unused:
        entry["unused"] = True
    if param.name in sparse:
        entry["sparse"] = sparse[param.name]
    return entry


def layer_entry(name, forward_us, backward_us, work, params, unused, sparse):
    return {"name": name,
            "forward_us": round(max(forward_us, 0.0), 3),
            "backward_us": round(max(backward_us, 0.0), 3),
            "forward_flops": work.forward_flops,
            "backward_flops": work.backward_flops,
            "forward_bytes": work.forward_bytes,
            "backward_bytes": work.backward_bytes,
            "params": [param_entry(p, unused, sparse) for p in params]}


def build_profile(name, layers, samples, work, unused, sparse, momentum):
    """The profile: the layers in the backward order of the last step, with
    the medians of their times and their `work`, then the unused
    parameters."""
    times = [backward_times(layers, unused, s) for s in samples]
    order = times[-1][0]

    def forward_median(index):
        return statistics.median(s.forward_us.get(index, 0.0)
                                 for s in samples)

    entries = []
    for index in order:
        layer = layers[index]
        backward = statistics.median(t[1][index] for t in times)
        used = [p for p in layer.params if p.name not in unused]
        entries.append(layer_entry(layer.name, forward_median(index),
                                   backward, work[index], used, unused,
                                   sparse))
    # Ready at the end of backward: after every other layer, taking no
    # backward time (nor work) of their own.
    for index, layer in enumerate(layers):
        idle = [p for p in layer.params if p.name in unused]
        if idle:
            if index in order:
                forward, idle_work = 0.0, Work()
            else:
                forward = forward_median(index)
                idle_work = Work(work[index].forward_flops,
                                 work[index].forward_bytes)
            entries.append(layer_entry(layer.name, forward, 0.0, idle_work,
                                       idle, unused, sparse))
    params = [p for e in entries for p in e["params"]]
    return {
        "format": "commopt-grad-profile",
        "version": 1,
        "model": name,
        # Totals the importer checks the body against: a profile that lost
        # layers or parameters on its way is an error, not a smaller model.
        "num_layers": len(entries),
        "num_params": len(params),
        "num_elements": sum(math.prod(p["shape"]) for p in params),
        "forward_us": round(sum(e["forward_us"] for e in entries), 3),
        "update_us": round(statistics.median(s.update_us for s in samples),
                           3),
        "update_flops": UPDATE_FLOPS_PER_ELEMENT[momentum > 0] * sum(
            p.tensor.numel() for layer in layers for p in layer.params),
        "update_bytes": UPDATE_ACCESSES_PER_ELEMENT[momentum > 0] * sum(
            nbytes([p.tensor]) for layer in layers for p in layer.params),
        "layers": entries,
    }


def duration(seconds):
    """'1.3 s', '12.5 ms'."""
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def plural(count, word, words=None):
    """'1 layer', '2 layers'."""
    return f"{count} {word if count == 1 else words or word + 's'}"


def main(argv):
    arguments = parse_arguments(argv)
    reporter = Reporter(arguments.quiet)
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as error:
        fail(f"{error}: install Debian's python3-torch and python3-torchvision "
             "and run with /usr/bin/python3")
    # `python3 commopt-export.py` puts the script's folder on sys.path, not
    # the current one: 'module:function' from the current folder should
    # work as with `python3 -m`.
    if os.getcwd() not in sys.path:
        sys.path.insert(1, os.getcwd())

    started = time.perf_counter()
    model = make_model(arguments.model)
    dtype = set_dtype(model, arguments.dtype)
    layers = collect_layers(model)
    if not layers:
        fail("the model has no trainable parameters")
    params = [p for layer in layers for p in layer.params]
    elements = sum(p.tensor.numel() for p in params)
    built_in = duration(time.perf_counter() - started)
    reporter.progress(
        f"built {arguments.model} in {built_in}: "
        f"{plural(len(params), 'parameter')} ({elements:,} elements, "
        f"{dtype_name(dtype)}) in {plural(len(layers), 'layer')}")

    samples, work = run_steps(model, layers, dtype, arguments, reporter)
    unused = unused_params(layers, samples)
    if unused:
        names = [p.name for p in params if p.name in unused]
        reporter.note(
            f"{plural(len(names), 'parameter')} got no gradient in the "
            f"measured steps: {', '.join(names)}; treated as ready at the end "
            "of backward")
    name = arguments.name or arguments.model.rpartition(":")[2]
    sparse = sample_rows_touched(model, layers, dtype, arguments, reporter)
    profile = build_profile(name, layers, samples, work, unused, sparse,
                            arguments.momentum)
    text = json.dumps(profile, indent=1) + "\n"
    # Under mpirun every rank measures, so that the layers are timed under
    # the load of a data-parallel job on this machine; rank 0 writes.
    if not is_rank0():
        return
    if arguments.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(arguments.output, "w") as output:
                output.write(text)
        except OSError as error:
            fail(f"cannot write {arguments.output}: {error}")
    aliases = sum(len(p.aliases) for p in params)
    written = "standard output" if arguments.output == "-" \
        else arguments.output
    reporter.progress(
        f"{plural(len(params), 'parameter')} in "
        f"{plural(len(profile['layers']), 'layer')}, "
        f"{plural(aliases, 'alias', 'aliases')}, "
        f"{len(unused)} unused; profile written to {written}")
    def total(field):
        return sum(entry[field] for entry in profile["layers"])

    reporter.progress(
        f"counted {total('forward_flops') / 1e9:,.2f} GFLOP and "
        f"{total('forward_bytes') / 1e6:,.1f} MB forward per step, "
        f"{total('backward_flops') / 1e9:,.2f} GFLOP and "
        f"{total('backward_bytes') / 1e6:,.1f} MB backward")
    kinds = tuple(t for types, _ in counted_kinds() for t in types)
    uncounted = [layer.name for layer in layers
                 if not isinstance(layer.module, kinds)]
    if uncounted:
        reporter.progress(
            f"{plural(len(uncounted), 'layer')} of a kind whose own work is "
            f"not counted: {', '.join(uncounted)}; with "
            "--grad-profile-device their times count only the counted "
            "modules around them")


if __name__ == "__main__":
    main(sys.argv[1:])
