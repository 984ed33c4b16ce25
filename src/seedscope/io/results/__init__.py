"""The readers of results: per-example predictions and scores (:data:`seedscope.io.READERS`), per-run score tables,
a store's predictions and context, task texts. Sampled generations are :mod:`seedscope.io.samples`' concern; what
both read with (detection, options, validation) is at :mod:`seedscope.io`'s level."""
