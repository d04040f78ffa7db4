package scenario

import (
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// Transitional aliases: the names the runner, cmd and tests used before the transports became
// plugins (issue 18). Generic scenario code does not use them.
const (
	// TransportMRC is transport.kind mrc (mrcnic.Kind).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic
	// and mrcnic.
	TransportMRC = mrcnic.Kind
	// TransportRoCE is transport.kind roce (rocenic.Kind).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	TransportRoCE = rocenic.Kind
	// ProfileMRC is fabric.profile mrc (mrcnic.Kind).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic
	// and mrcnic.
	ProfileMRC = mrcnic.Kind
	// ProfileRoCE is fabric.profile roce (rocenic.Kind).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	ProfileRoCE = rocenic.Kind
	// ProfileMRCPmax is mrcnic.ProfilePmax.
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic
	// and mrcnic.
	ProfileMRCPmax = mrcnic.ProfilePmax
	// ProfileRoCEPmax is rocenic.ProfilePmax.
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	ProfileRoCEPmax = rocenic.ProfilePmax
	// ProfileRoCEPFCAlpha is rocenic.ProfilePFCAlpha.
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	ProfileRoCEPFCAlpha = rocenic.ProfilePFCAlpha
	// ProfileRoCEKmin is rocenic.ProfileKmin (bytes per 100 Gb/s).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	ProfileRoCEKmin = rocenic.ProfileKmin
	// ProfileRoCEKmax is rocenic.ProfileKmax (bytes per 100 Gb/s).
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	ProfileRoCEKmax = rocenic.ProfileKmax
	// RoCEBufferTime is rocenic.BufferTime.
	//
	// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
	RoCEBufferTime = rocenic.BufferTime
)

// SwitchIngresses is rocenic.SwitchIngresses: by node of l, the links at a switch's ports.
//
// Deprecated: transitional alias for the runner; removed when the runner reads rocenic.
func SwitchIngresses(l topo.Topology) [][]topo.Link { return rocenic.SwitchIngresses(l) }
