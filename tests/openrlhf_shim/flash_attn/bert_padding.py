"""`flash_attn.bert_padding`'s helpers, in plain PyTorch (the test stand-in, README.md beside)."""
import torch
import torch.nn.functional as F
from einops import rearrange


def index_first_axis(tensor: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """tensor[indices] along the first axis."""
    return tensor[indices]


def unpad_input(hidden_states: torch.Tensor, attention_mask: torch.Tensor, unused_mask=None):
    """(the unpadded tokens, their flat indices, cumulative sequence lengths, longest length, lengths)."""
    mask = attention_mask if unused_mask is None else attention_mask + unused_mask
    seqlens = mask.sum(dim=-1, dtype=torch.int32)
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(mask.flatten(), as_tuple=False).flatten()
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = rearrange(hidden_states, "b s ... -> (b s) ...")
    return index_first_axis(flat, indices), indices, cu_seqlens, int(seqlens.max().item()), used


def pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int, seqlen: int) -> torch.Tensor:
    """The inverse of `unpad_input`: (batch, seqlen, ...) with zeros where nothing was."""
    out = torch.zeros((batch * seqlen, *hidden_states.shape[1:]), device=hidden_states.device,
                      dtype=hidden_states.dtype)
    out[indices] = hidden_states
    return rearrange(out, "(b s) ... -> b s ...", b=batch)
