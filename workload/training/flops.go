package training

// Params counts a model's parameters (weights), from the shapes in Model.
//
// Per layer: attention (standard: h x a d for Q, 2 h x kv d for K and V, a d x h for the
// output; latent attention: h x q_lora + q_lora x a (d + rope) + h x (kv_lora + rope) +
// kv_lora x a (d + v) + a v x h, DeepSeek-V2 §2.1), two RMSNorm weight vectors of h, and an
// MLP: dense 3 h f (SwiGLU) or 2 h f (GELU); MoE: (E + shared) expert MLPs of 3 h f_e plus a
// router of h x E. Plus the input embedding and the LM head, V x h each (untied), and a final
// norm. Llama-3-70B counts 70.55 G, Llama-3-405B 405.8 G, DeepSeek-V3 671 G (37.5 G active).
type Params struct {
	Total     int64 // every weight
	Active    int64 // the weights one token uses (MoE: top-k routed + shared experts)
	Embedding int64 // the input embedding, V x h (no FLOPs)
	LMHead    int64 // the output projection, V x h
	Attention int64 // attention weights of one layer
	Norms     int64 // norm weights of one layer
	DenseMLP  int64 // MLP weights of one dense layer
	Experts   int64 // routed + shared expert weights of one MoE layer (what expert parallelism shards)
	Router    int64 // router weights of one MoE layer
}

func (m Model) gatedFactor() int64 {
	if m.MLP == "gelu" {
		return 2
	}
	return 3
}

// attnParams returns the attention weights of one layer.
func (m Model) attnParams() int64 {
	h, a, d := int64(m.Hidden), int64(m.Heads), int64(m.HeadDim)
	if m.KVLoRARank > 0 {
		rope, v, ql, kl := int64(m.RopeHeadDim), int64(m.VHeadDim), int64(m.QLoRARank), int64(m.KVLoRARank)
		q := h * a * (d + rope)
		if ql > 0 {
			q = h*ql + ql*a*(d+rope)
		}
		return q + h*(kl+rope) + kl*a*(d+v) + a*v*h
	}
	kv := int64(m.KVHeads)
	return h*a*d + 2*h*kv*d + a*d*h
}

// expertParams returns one expert MLP's weights.
func (m Model) expertParams() int64 { return m.gatedFactor() * int64(m.Hidden) * int64(m.ExpertFFN) }

// Params returns the parameter counts.
func (m Model) Params() Params {
	h, V := int64(m.Hidden), int64(m.Vocab)
	p := Params{
		Embedding: V * h,
		LMHead:    V * h,
		Attention: m.attnParams(),
		Norms:     2 * h,
		DenseMLP:  m.gatedFactor() * h * int64(m.FFN),
	}
	if m.Experts > 0 {
		p.Experts = int64(m.Experts+m.SharedExperts) * m.expertParams()
		p.Router = h * int64(m.Experts)
	}
	dense, moe := int64(m.denseLayers()), int64(m.Layers-m.denseLayers())
	common := int64(m.Layers)*(p.Attention+p.Norms) + p.Embedding + p.LMHead + h
	p.Total = common + dense*p.DenseMLP + moe*(p.Experts+p.Router)
	p.Active = common + dense*p.DenseMLP + moe*(int64(m.TopK+m.SharedExperts)*m.expertParams()+p.Router)
	return p
}

// FLOPCount splits floating-point operations (a multiply-add is 2) into weight matmuls and
// the attention-score products.
type FLOPCount struct {
	Matmul    float64 // projections, MLP or experts, router, LM head: 2 FLOPs per weight per token
	Attention float64 // QK^T and attention x V: 2 s a (d_qk + d_v) per token per layer
}

// Total returns Matmul + Attention.
func (c FLOPCount) Total() float64 { return c.Matmul + c.Attention }

// layerForward returns the forward FLOPs of layer i (0-based) per token.
//
// The count follows Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM" (SC'21), Appendix: a GEMM of an m x k by k x n matrix costs
// 2mkn; a layer's forward is 24 B s h^2 + 4 B s^2 h for GPT (QKV 6Bsh^2, scores 2Bs^2h,
// attention over values 2Bs^2h, output projection 2Bsh^2, MLP 16Bsh^2), generalised here to
// grouped-query and latent attention, SwiGLU and experts. Attention scores are counted in
// full (no causal halving), as the paper does.
func (m Model) layerForward(i int) FLOPCount {
	qk, v := float64(m.HeadDim), float64(m.HeadDim)
	if m.KVLoRARank > 0 {
		qk, v = float64(m.HeadDim+m.RopeHeadDim), float64(m.VHeadDim)
	}
	c := FLOPCount{
		Matmul:    2 * float64(m.attnParams()),
		Attention: 2 * float64(m.SeqLen) * float64(m.Heads) * (qk + v),
	}
	if m.moeLayer(i) {
		c.Matmul += 2 * (float64(m.TopK+m.SharedExperts)*float64(m.expertParams()) + float64(m.Hidden)*float64(m.Experts))
	} else {
		c.Matmul += 2 * float64(m.gatedFactor()) * float64(m.Hidden) * float64(m.FFN)
	}
	return c
}

// headForward returns the LM head's forward FLOPs per token (2 V h; Narayanan et al. count
// it as 2BshV per microbatch).
func (m Model) headForward() float64 { return 2 * float64(m.Vocab) * float64(m.Hidden) }

// StepFLOPs returns the model FLOPs of one optimizer step (GlobalBatch x SeqLen tokens):
// forward and backward, the backward costing twice the forward (Narayanan et al., SC'21,
// Appendix), without activation recomputation. For a dense model Matmul is close to the rule
// of thumb 6 x params x tokens (it leaves out the input embedding, which has no FLOPs), and
// Attention adds 6 s a (d_qk + d_v) l per token: for GPT shapes the total is Narayanan et al.'s
// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (their 96 includes a recomputed forward).
func (m Model) StepFLOPs() FLOPCount {
	var c FLOPCount
	for i := 0; i < m.Layers; i++ {
		l := m.layerForward(i)
		c.Matmul += l.Matmul
		c.Attention += l.Attention
	}
	c.Matmul += m.headForward()
	t := float64(m.Tokens())
	return FLOPCount{Matmul: 3 * t * c.Matmul, Attention: 3 * t * c.Attention}
}

// kvElemsPerToken returns the key and value elements one token carries into attention: 2 x
// kv_heads x head_dim, or with latent attention the compressed latent plus the decoupled
// rotary key (kv_lora_rank + rope_head_dim; DeepSeek-V2 §2.1).
func (m Model) kvElemsPerToken() int64 {
	if m.KVLoRARank > 0 {
		return int64(m.KVLoRARank + m.RopeHeadDim)
	}
	return 2 * int64(m.KVHeads) * int64(m.HeadDim)
}

// The memory-bound operations are counted as the Llama reference implementation runs them in
// PyTorch eager mode (meta-llama/llama3, model.py), one kernel per operation, each reading its
// inputs from and writing its output to HBM:
//
//   - RMSNorm, x * rsqrt(mean(x^2) + eps) computed in fp32 then cast back and scaled:
//     cast to fp32, square, mean, multiply, cast back, multiply by the weight, (4e + 28) bytes
//     per element for activations of e bytes (36 for bf16);
//   - the residual add: read two, write one, 3e;
//   - the rotary embedding of queries and keys, in fp32 complex arithmetic: 2e + 16 per
//     element (20 for bf16);
//   - SwiGLU, silu(gate) * up: 5e per element of the FFN (GELU: 2e).
//
// With tensor parallelism the norms and residual adds run on 1/tp of the tokens (sequence
// parallelism, Korthikanti et al. 2023 §4.2.2) and the rotary embedding and activation on the
// rank's heads and FFN slice. Fused kernels (Transformer Engine, torch.compile) move about a
// third of these bytes; lower MemoryEfficiency to model eager kernels on a faster stack's
// terms, or raise it for fused ones. The backward moves about twice the forward's (each
// operation's gradient reads its saved input and the output's gradient and writes the input's
// gradient).

// attnMemBytes returns the HBM bytes the memory-bound operations of a layer's attention
// block move per token on one of tp ranks in the forward: the input RMSNorm, the residual add
// and the rotary embedding of the rank's queries and keys.
func (m Model) attnMemBytes(tp int) float64 {
	h, t, e := float64(m.Hidden), float64(tp), float64(m.bytesPerElem())
	qk := float64(m.Heads+m.KVHeads) * float64(m.HeadDim)
	if m.KVLoRARank > 0 {
		qk = float64(m.Heads)*float64(m.HeadDim+m.RopeHeadDim) + float64(m.KVLoRARank+m.RopeHeadDim)
	}
	return ((4*e+28)*h+3*e*h)/t + (2*e+16)*qk/t
}

// mlpMemBytes returns the same for layer i's MLP block: its RMSNorm and residual add, and the
// activation over f, the dense FFN or, for a MoE layer, the FFN of the top-k and shared
// experts a token passes through.
func (m Model) mlpMemBytes(i, tp int) float64 {
	h, t, e := float64(m.Hidden), float64(tp), float64(m.bytesPerElem())
	f := float64(m.FFN)
	if m.moeLayer(i) {
		f = float64(m.TopK+m.SharedExperts) * float64(m.ExpertFFN)
	}
	act := 5 * e * f
	if m.MLP == "gelu" {
		act = 2 * e * f
	}
	return ((4*e+28)*h+3*e*h)/t + act/t
}

// lossBytes returns the HBM bytes per token of the loss on one of tp ranks: the vocabulary-
// parallel softmax cross-entropy reads and writes V / tp logits in fp32 (Megatron's
// vocab_parallel_cross_entropy), forward and backward each.
func (m Model) lossBytes(tp int) float64 { return 2 * 4 * float64(m.Vocab) / float64(tp) }
