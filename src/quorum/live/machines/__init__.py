"""The machine annotators: LLM and local-model calls, prompts, parsing, paid exactly once.

Modules:

- ``answer_health``: Loud warnings about answers a run paid for and could not use.
- ``calls``: The pieces every annotator shares: requests, responses, rate limits, health,
  secrets.
- ``chat_try``: One HTTP try of a chat completion: the one implementation both engines use.
- ``http11``: A minimal HTTP/1.1 client for plain-``http://`` JSON POSTs on keep-alive
  connections.
- ``llm``: LLM annotators through litellm: any provider it supports, or an OpenAI-compatible
  server.
- ``local``: Local model annotators: any Python callable, or a :mod:`quorum.models` classifier.
- ``loop``: The private asyncio loop the live source runs its calls on (one per process).
- ``machine_calls``: Machine calls made exactly once, and recorded: the paid path of the live
  source.
- ``money_guard``: The project's money guard: no call or human task is held that the ledger
  cannot pay, and the running counts it keeps up to date (what the progress bar shows).
- ``openai_http``: A lean client for OpenAI-compatible chat servers (``openai/NAME`` +
  ``api_base``).
- ``output``: Answers parseable by construction: constrained output and logprob confidences
  (issue 27).
- ``prompts``: Prompt templates: the paper's prompts (appendix "Prompts") as editable defaults.
- ``ray_calls``: Live LLM calls on Ray: each HTTP try runs in one of a few async Ray actors.
- ``swap``: A pairwise judge asked in both orders (``swap = true`` on a machine annotator).
"""
