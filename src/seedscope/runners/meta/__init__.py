"""Meta-learning runner (methods ``protonet``, ``maml``, ``reptile``) over a frozen encoder's token states.

``runner.run`` meta-trains one spec on episodes of its task and predicts the dev split from
support sets. Its parts: ``token_states`` (the frozen encoder's outputs, kept in the cache),
``episodes`` (episode and support-set draws from their seeds) and ``learners`` (the TextCNN
and the ProtoNet, MAML and Reptile training loops).

May import: the layers below the runners, the shared runner modules
(``seedscope.runners.checkpoints``, ``data``, ``environment``, ``result``) and its own
modules; never ``seedscope.runners.finetune`` or ``seedscope.runners.icl``.
"""
