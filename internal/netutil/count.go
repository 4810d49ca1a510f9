// Package netutil counts what crosses sockets: one byte-counting connection for every
// client and lab tool that reports wire bytes (TCP payload: TLS records, HTTP framing
// and bodies; not TCP/IP headers).
package netutil

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
)

// Counter adds up the bytes read and written by the connections that count into it,
// and how many there were. The zero value is ready; it is safe for concurrent use.
type Counter struct {
	read, written, conns atomic.Int64
}

// Bytes returns the bytes read and written so far.
func (c *Counter) Bytes() (read, written int64) { return c.read.Load(), c.written.Load() }

// Conns returns how many connections have counted into c.
func (c *Counter) Conns() int64 { return c.conns.Load() }

func (c *Counter) add(read, written int64) {
	if read != 0 {
		c.read.Add(read)
	}
	if written != 0 {
		c.written.Add(written)
	}
}

// CountingConn is a net.Conn that counts the bytes it reads and writes, for itself
// (Bytes) and into every Counter it was made with (a client's totals, say).
type CountingConn struct {
	net.Conn
	own  Counter
	into []*Counter
}

// NewCountingConn wraps nc; it counts as one connection in each of into. Wrap the
// TCP connection, below TLS, to count what crosses the socket.
func NewCountingConn(nc net.Conn, into ...*Counter) *CountingConn {
	for _, c := range into {
		c.conns.Add(1)
	}
	cc := &CountingConn{Conn: nc, into: into}
	cc.own.conns.Add(1)
	return cc
}

// Read implements net.Conn.
func (c *CountingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.count(int64(n), 0)
	return n, err
}

// Write implements net.Conn.
func (c *CountingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.count(0, int64(n))
	return n, err
}

func (c *CountingConn) count(read, written int64) {
	c.own.add(read, written)
	for _, k := range c.into {
		k.add(read, written)
	}
}

// Bytes returns the bytes this connection has read and written.
func (c *CountingConn) Bytes() (read, written int64) { return c.own.Bytes() }

// FindCountingConn returns the CountingConn under conn — conn itself, or the one
// beneath a TLS connection or any wrapper with a NetConn method — or nil.
func FindCountingConn(conn net.Conn) *CountingConn {
	for conn != nil {
		switch c := conn.(type) {
		case *CountingConn:
			return c
		case *tls.Conn:
			conn = c.NetConn()
		default:
			u, ok := conn.(interface{ NetConn() net.Conn })
			if !ok {
				return nil
			}
			conn = u.NetConn()
		}
	}
	return nil
}

// DialFunc dials like net.Dialer.DialContext.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// CountingDialer returns a DialFunc that dials with dial and wraps every connection
// in a CountingConn counting into into.
func CountingDialer(dial DialFunc, into ...*Counter) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return NewCountingConn(nc, into...), nil
	}
}
