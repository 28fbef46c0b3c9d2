//go:build !linux

package serialline

// resetInput discards the tty's input buffer.
func (p *Port) resetInput() error { return p.cfg.ResetInputBuffer() }
