package transport

// FlowLevelNoter is implemented by a transport block (the pointer NewConfig returns) whose
// flow-level model (Plugin.Flow) leaves out part of what the resolved block asks for: the
// runner puts each note in summary.json's "notes" and the terminal summary of a run at
// run.engine flow, so a figure is not read as what the packet level would give. InfiniBand
// congestion control (transport.ib.cc) is one: the flow level gives max-min rates on
// lossless links, with no FECN, BECN or CCT. A block that does not implement it, or returns
// no notes, is modelled as its configuration says.
type FlowLevelNoter interface {
	// FlowLevelNotes returns one sentence per setting of the resolved block the flow level
	// does not model, each naming its scenario field (e.g. "transport.ib.cc: ..."); nil when
	// there is none.
	FlowLevelNotes() []string
}
