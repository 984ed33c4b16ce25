"""HostReads counts, by hand: the operations dispatched and each scalar read of a tensor by the host."""

import torch

from seedscope.runners.finetune.host_reads import HostReads


def test_counts_each_operation_and_each_scalar_read():
    values = torch.arange(4.0)
    with HostReads() as reads:
        total = values.sum()  # one op
        positive = total > 0  # one op
        assert total.item() == 6.0  # a read
        assert bool(positive)  # a read
        assert values.tolist() == [0.0, 1.0, 2.0, 3.0]  # a host tensor's values: no dispatch at all
    assert reads.scalar_reads == 2
    assert reads.by_op["aten.sum.default"] == 1 and reads.by_op["aten.gt.Scalar"] == 1
    assert reads.ops == 4 and reads.host_copies == 0
    assert reads.cuda_syncs in (None, 0)  # nothing here is on a GPU


def test_nothing_is_counted_outside_the_block():
    with HostReads() as reads:
        pass
    torch.ones(2).sum().item()
    assert reads.ops == 0 and reads.scalar_reads == 0
