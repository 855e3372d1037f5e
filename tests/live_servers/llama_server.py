"""llama-cpp-python's OpenAI-compatible server with the AMX weight repacking off.

``python llama_server.py ARGS`` is ``python -m llama_cpp.server ARGS`` with the model loaded
with ``use_extra_bufts = False``. On this machine's CPUs (AMX tiles) the repacked Q4_1
weights of SmolLM2 crash the server on the first completion (a general protection fault at
``ldtilecfg`` in ``ggml_backend_amx_mul_mat``, seen in dmesg); the plain CPU kernels give
the same answers. Start it with ``OMP_WAIT_POLICY=PASSIVE`` and one thread on a busy
2-core machine: OpenMP threads that spin made each call about 40x slower (20 s, not 0.5 s).
"""

from __future__ import annotations

import sys

import llama_cpp
import llama_cpp.llama as llama_module

_default_params = llama_cpp.llama_model_default_params


def _params():
    p = _default_params()
    p.use_extra_bufts = False
    return p


if __name__ == "__main__":
    llama_module.llama_cpp.llama_model_default_params = _params
    from llama_cpp.server.__main__ import main

    sys.argv[0] = "llama_cpp.server"
    main()
