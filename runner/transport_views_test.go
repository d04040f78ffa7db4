package runner

import (
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// mrcView is an MRC run's transport block: the common figures and MRC's own, for tests.
type mrcView struct {
	*transport.Summary
	*mrcnic.Detail
}

// roceView is a RoCE run's transport block: the common figures and RoCE's own, for tests.
type roceView struct {
	*transport.Summary
	*rocenic.Detail
}

// mrcT returns the summary's MRC block (nil pointers when the run was not MRC).
func (s Summary) mrcT() mrcView {
	if s.Transport == nil || s.Transport.Kind != mrcnic.Kind {
		return mrcView{}
	}
	d, _ := s.Transport.Detail.(*mrcnic.Detail)
	return mrcView{s.Transport, d}
}

// roceT returns the summary's RoCE block (nil pointers when the run was not RoCE).
func (s Summary) roceT() roceView {
	if s.Transport == nil || s.Transport.Kind != rocenic.Kind {
		return roceView{}
	}
	d, _ := s.Transport.Detail.(*rocenic.Detail)
	return roceView{s.Transport, d}
}

// mrcRun returns the typed run of an MRC run's endpoint, nil otherwise.
func (res *Result) mrcRun() *mrcnic.Run {
	if res.Endpoint == nil {
		return nil
	}
	r, _ := res.Endpoint.Run().(*mrcnic.Run)
	return r
}

// roceRun returns the typed run of a RoCE run's endpoint, nil otherwise.
func (res *Result) roceRun() *rocenic.Run {
	if res.Endpoint == nil {
		return nil
	}
	r, _ := res.Endpoint.Run().(*rocenic.Run)
	return r
}
