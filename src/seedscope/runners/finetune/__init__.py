"""Fine-tuning runner (methods ``full`` and ``lora``): Hugging Face ``Trainer`` + PEFT.

``runner.run`` fine-tunes one spec and predicts its dev split. Its parts: ``models`` (the
right head for a task, LoRA), ``base_weights`` (one frozen base per process under LoRA),
``features`` (tokenising a task, the collators), ``choice_lm`` (multiple choice on a
decoder-only model) and ``trainer`` (the ``Trainer`` whose batch order is the ``data_order``
seed's alone). ``fused`` trains runs that differ only in their seeds as one stacked model
(``fused_training``: the loop; ``fused_dropout``: each member's own dropout).

May import: the layers below the runners, the shared runner modules
(``seedscope.runners.checkpoints``, ``data``, ``environment``, ``result``) and its own
modules; never ``seedscope.runners.icl`` or ``seedscope.runners.meta``.
"""
