"""The data loader deepspeed.initialize builds from training_data (DeepSpeedDataLoader): batches
of train_micro_batch_size_per_gpu, each rank reading its share through a DistributedSampler
(shuffled with seed 0, as DeepSpeed's; call data_sampler.set_epoch(e) for a new order each
epoch), dropping the last incomplete batch when the ds_config says dataloader_drop_last."""
import torch
from torch.utils.data.distributed import DistributedSampler


class DeepSpeedDataLoader:
    def __init__(self, dataset, batch_size, rank, world_size, collate_fn=None, num_workers=0,
                 data_sampler=None, drop_last=False):
        if data_sampler is None:
            data_sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
        self.dataset = dataset
        self.batch_size = batch_size
        self.data_sampler = data_sampler
        self.drop_last = drop_last
        self._loader = torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, sampler=data_sampler, collate_fn=collate_fn,
            num_workers=num_workers, drop_last=drop_last)

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        return iter(self._loader)
