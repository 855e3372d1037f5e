"""Local test servers and a small test router for the live-annotation tests.

- ``fixtures``: start/stop test servers (the fake OpenAI server, llama.cpp with SmolLM2),
  write projects, run the CLI (in a subprocess, or in this process: ``quorum_here``);
- ``sessions``: the servers a pytest process starts once and every test file shares (Label
  Studio, its Chromium, llama.cpp with SmolLM2), session fixtures registered in
  ``tests/conftest.py``;
- ``fake_openai``: the fault-injection chat server; ``reply_endpoint``: an endpoint whose
  every reply a test writes; ``llama_server``: llama-cpp-python's server without AMX
  repacking;
- ``models``: deterministic local models; ``routers``: a small deterministic router;
- ``scripted_team``: scripted people answering while a run waits (the file queue's
  ``FileQueueTeam``, Label Studio's ``LabelStudioPeople``), for the tests and the scenario
  scripts;
- ``compiled_cache``: the compiled (numba) routing loops compiled once per run, not once per
  xdist worker (a lock around their compilation, a warm-up the xdist controller starts).
"""
