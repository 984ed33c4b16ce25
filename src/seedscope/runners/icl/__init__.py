"""In-context learning runner (method ``icl``): prompting a causal or sequence-to-sequence model.

``runner.run`` prompts one spec: demonstrations drawn by the ``sample_choice`` and
``sample_order`` seeds, the ``prompt_format`` seed's template, scoring or generation, optional
contextual calibration; a task named ``lm-eval:NAME`` goes to ``lm_eval_runner``, which runs
lm-evaluation-harness's own task (prompts, sampler, filters, metrics). Its parts:
``language_models`` (loading a model to prompt), ``lm_tokens`` (lm-eval's context /
continuation split), ``lm_scoring`` (batched scoring with the prefix cache, generation) and
``calibration``.

May import: the layers below the runners, the shared runner modules
(``seedscope.runners.checkpoints``, ``data``, ``environment``, ``result``) and its own
modules; never ``seedscope.runners.finetune`` or ``seedscope.runners.meta``.
"""
