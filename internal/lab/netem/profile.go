package netem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Impairment is what one direction of a link does to its packets, in this order:
// random loss, duplication, corruption, the rate-limited drop-tail queue, then the
// one-way delay with jitter (and the reorder share, which skips the delay).
// The zero value is a perfect link: no loss, no delay, unlimited rate.
type Impairment struct {
	// Rate limits the link: constant, a cyclic schedule, or a Mahimahi trace.
	Rate RateSpec `yaml:"rate,omitempty"`
	// Burst is the token-bucket depth (tbf's "burst"): bytes that may leave back to
	// back at line speed after an idle spell. Zero means pure serialisation at Rate.
	Burst Size `yaml:"burst,omitempty"`
	// Queue bounds the drop-tail queue in front of the rate limit. With a rate and
	// no bound the queue holds 1000 packets, as netem's default limit.
	Queue Queue `yaml:"queue,omitempty"`
	// Delay is the one-way propagation delay, added after the queue.
	Delay Duration `yaml:"delay,omitempty"`
	// Jitter varies the delay by up to ±Jitter (uniform) or with this standard
	// deviation (normal).
	Jitter Duration `yaml:"jitter,omitempty"`
	// Distribution of the jitter: "uniform" (default, as netem) or "normal".
	Distribution string `yaml:"distribution,omitempty"`
	// JitterReorders draws the jitter for each packet on its own, so packets
	// overtake each other (netem's behaviour). When false (the default) the delay
	// wanders smoothly between random values instead, never falling faster than
	// time passes: packets stay in order and the mean delay is still Delay.
	JitterReorders bool `yaml:"jitter_reorders,omitempty"`
	// Loss drops packets at random: a percentage (Bernoulli) or a Gilbert-Elliott
	// model for bursts.
	Loss Loss `yaml:"loss,omitempty"`
	// Duplicate sends this share of packets twice.
	Duplicate Percent `yaml:"duplicate,omitempty"`
	// Corrupt flips one random bit past the IP header in this share of packets.
	Corrupt Percent `yaml:"corrupt,omitempty"`
	// Reorder sends this share of packets without the delay, so they overtake the
	// packets ahead of them (netem's "reorder").
	Reorder Percent `yaml:"reorder,omitempty"`
}

// IsZero reports whether the impairment leaves packets alone.
func (m Impairment) IsZero() bool {
	return m.Rate.IsZero() && m.Burst == 0 && m.Queue == (Queue{}) && m.Delay == 0 &&
		m.Jitter == 0 && m.Loss.IsZero() && m.Duplicate == 0 && m.Corrupt == 0 && m.Reorder == 0
}

// Validate checks the values are usable.
func (m Impairment) Validate() error {
	var errs []error
	if err := m.Rate.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := m.Loss.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch m.Distribution {
	case "", "uniform", "normal":
	default:
		errs = append(errs, fmt.Errorf("distribution %q: want uniform or normal", m.Distribution))
	}
	if m.Queue.Packets < 0 || m.Queue.Bytes < 0 || m.Queue.Latency < 0 {
		errs = append(errs, errors.New("queue limits must not be negative"))
	}
	for name, p := range map[string]Percent{"duplicate": m.Duplicate, "corrupt": m.Corrupt, "reorder": m.Reorder} {
		if p < 0 || p > 100 {
			errs = append(errs, fmt.Errorf("%s %v%% is outside 0..100", name, float64(p)))
		}
	}
	return errors.Join(errs...)
}

// String summarises the impairment in tc-like words.
func (m Impairment) String() string {
	var parts []string
	if !m.Rate.IsZero() {
		parts = append(parts, "rate "+m.Rate.String())
	}
	if m.Burst > 0 {
		parts = append(parts, fmt.Sprintf("burst %dB", m.Burst))
	}
	if m.Queue != (Queue{}) {
		parts = append(parts, "queue "+m.Queue.String())
	}
	if m.Delay > 0 || m.Jitter > 0 {
		s := "delay " + m.Delay.D().String()
		if m.Jitter > 0 {
			s += " ±" + m.Jitter.D().String()
			if m.Distribution == "normal" {
				s += " normal"
			}
			if !m.JitterReorders {
				s += " (in order)"
			}
		}
		parts = append(parts, s)
	}
	if !m.Loss.IsZero() {
		parts = append(parts, "loss "+m.Loss.String())
	}
	if m.Duplicate > 0 {
		parts = append(parts, "duplicate "+trimFloat(float64(m.Duplicate))+"%")
	}
	if m.Corrupt > 0 {
		parts = append(parts, "corrupt "+trimFloat(float64(m.Corrupt))+"%")
	}
	if m.Reorder > 0 {
		parts = append(parts, "reorder "+trimFloat(float64(m.Reorder))+"%")
	}
	if len(parts) == 0 {
		return "perfect"
	}
	return strings.Join(parts, ", ")
}

// Profile is a link's behaviour in both directions. Forward runs from a link's first
// host to its second; in the default topology that is client → server (upload) and
// Reverse is server → client (download).
type Profile struct {
	Name        string
	Description string
	Forward     Impairment
	Reverse     Impairment
}

// Symmetric returns a profile that does m in both directions.
func Symmetric(m Impairment) Profile { return Profile{Forward: m, Reverse: m} }

// Validate checks both directions.
func (p Profile) Validate() error {
	var errs []error
	if err := p.Forward.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("forward: %w", err))
	}
	if err := p.Reverse.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("reverse: %w", err))
	}
	return errors.Join(errs...)
}

// Reversed swaps the directions.
func (p Profile) Reversed() Profile {
	p.Forward, p.Reverse = p.Reverse, p.Forward
	return p
}

// LoadProfile reads a profile file (YAML). The top-level fields apply to both
// directions; optional "forward:" and "reverse:" sections override them per
// direction. A trace file named by "rate: {trace: FILE}" is read relative to the
// profile's folder.
func LoadProfile(path string) (Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, err
	}
	p, err := ParseProfile(data, filepath.Dir(path))
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", path, err)
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return p, nil
}

// ParseProfile reads a profile from YAML; dir resolves relative trace paths.
func ParseProfile(data []byte, dir string) (Profile, error) {
	var doc profileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // empty document: a perfect link
			return Profile{}, nil
		}
		return Profile{}, err
	}
	return profileFromDoc(doc, dir)
}

type profileDoc struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Forward     yaml.Node `yaml:"forward"`
	Reverse     yaml.Node `yaml:"reverse"`
	Impairment  `yaml:",inline"`
}

func profileFromNode(n *yaml.Node, dir string) (Profile, error) {
	var doc profileDoc
	if err := strictDecode(n, &doc); err != nil {
		return Profile{}, err
	}
	return profileFromDoc(doc, dir)
}

func profileFromDoc(doc profileDoc, dir string) (Profile, error) {
	p := Profile{Name: doc.Name, Description: doc.Description, Forward: doc.Impairment, Reverse: doc.Impairment}
	for _, d := range []struct {
		name string
		node *yaml.Node
		into *Impairment
	}{{"forward", &doc.Forward, &p.Forward}, {"reverse", &doc.Reverse, &p.Reverse}} {
		if d.node.Kind == 0 {
			continue
		}
		if err := strictDecode(d.node, d.into); err != nil {
			return Profile{}, fmt.Errorf("%s: %w", d.name, err)
		}
	}
	for _, m := range []*Impairment{&p.Forward, &p.Reverse} {
		if err := m.Rate.load(dir); err != nil {
			return Profile{}, err
		}
	}
	return p, p.Validate()
}

// strictDecode decodes n into v rejecting unknown fields, so a typo in a profile is
// an error instead of a silently perfect link.
func strictDecode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// Queue bounds a drop-tail queue. Set one or more; a packet is dropped when it would
// break any of them.
type Queue struct {
	Packets int      `yaml:"packets,omitempty"`
	Bytes   Size     `yaml:"bytes,omitempty"`
	Latency Duration `yaml:"latency,omitempty"` // tbf-style: drop what would wait longer
}

// DefaultQueuePackets bounds a rate-limited queue that has no explicit bound.
const DefaultQueuePackets = 1000

func (q Queue) String() string {
	var parts []string
	if q.Packets > 0 {
		parts = append(parts, strconv.Itoa(q.Packets)+" packets")
	}
	if q.Bytes > 0 {
		parts = append(parts, strconv.FormatInt(int64(q.Bytes), 10)+" bytes")
	}
	if q.Latency > 0 {
		parts = append(parts, q.Latency.D().String())
	}
	return strings.Join(parts, ", ")
}

// ParseQueue reads "100" or "100p" (packets), "64kb" (bytes) or "50ms" (latency).
func ParseQueue(s string) (Queue, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Queue{}, nil
	}
	if n, err := strconv.Atoi(t); err == nil {
		return Queue{Packets: n}, nil
	}
	for _, suf := range []string{"packets", "packet", "pkts", "pkt", "p"} {
		if strings.HasSuffix(t, suf) {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(t, suf)))
			if err != nil || n < 0 {
				return Queue{}, fmt.Errorf("queue %q: want a packet count such as 100p", s)
			}
			return Queue{Packets: n}, nil
		}
	}
	if strings.HasSuffix(t, "s") && !strings.HasSuffix(strings.ToLower(t), "bytes") {
		d, err := ParseDuration(t)
		if err != nil {
			return Queue{}, err
		}
		return Queue{Latency: Duration(d)}, nil
	}
	z, err := ParseSize(t)
	if err != nil {
		return Queue{}, fmt.Errorf("queue %q: want packets (100p), bytes (64kb) or a latency (50ms)", s)
	}
	return Queue{Bytes: z}, nil
}

// UnmarshalYAML accepts a scalar (see ParseQueue) or a mapping with packets, bytes
// and latency.
func (q *Queue) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParseQueue(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*q = v
		return nil
	}
	type plain Queue
	var v plain
	if err := strictDecode(n, &v); err != nil {
		return err
	}
	*q = Queue(v)
	return nil
}

// RateStep is one step of a cyclic rate schedule.
type RateStep struct {
	Rate Rate     `yaml:"rate"`
	For  Duration `yaml:"for"`
}

// RateSpec is a link's rate: a constant, a cyclic schedule of steps (which can
// oscillate between two rates with a duty cycle), or a Mahimahi trace.
type RateSpec struct {
	Constant Rate
	// Steps repeat from the moment the profile is applied. A step may have rate 0
	// (an outage) as long as another step has a positive rate.
	Steps []RateStep
	// Trace is a Mahimahi trace: each entry is a millisecond at which one
	// 1500-byte delivery opportunity occurs; the trace repeats.
	Trace *Trace
}

// ConstantRate is a RateSpec of one rate.
func ConstantRate(r Rate) RateSpec { return RateSpec{Constant: r} }

// Oscillate alternates between high (for duty·period) and low (for the rest).
func Oscillate(low, high Rate, period time.Duration, duty float64) RateSpec {
	hi := time.Duration(float64(period) * duty)
	return RateSpec{Steps: []RateStep{{Rate: high, For: Duration(hi)}, {Rate: low, For: Duration(period - hi)}}}
}

// IsZero reports an unlimited rate.
func (r RateSpec) IsZero() bool { return r.Constant == 0 && len(r.Steps) == 0 && r.Trace == nil }

// Validate checks the schedule can carry traffic.
func (r RateSpec) Validate() error {
	n := 0
	if r.Constant > 0 {
		n++
	}
	if len(r.Steps) > 0 {
		n++
		var total time.Duration
		positive := false
		for i, s := range r.Steps {
			if s.For <= 0 {
				return fmt.Errorf("rate schedule step %d has no duration", i+1)
			}
			if s.Rate < 0 {
				return fmt.Errorf("rate schedule step %d has a negative rate", i+1)
			}
			positive = positive || s.Rate > 0
			total += s.For.D()
		}
		if !positive {
			return errors.New("rate schedule has no step with a positive rate")
		}
		if total < time.Millisecond {
			return errors.New("rate schedule period is shorter than 1ms")
		}
	}
	if r.Trace != nil {
		n++
		if len(r.Trace.Millis) == 0 || r.Trace.Period <= 0 {
			return errors.New("rate trace is empty")
		}
	}
	if n > 1 {
		return errors.New("rate: give one of a constant, a schedule, an oscillation or a trace")
	}
	return nil
}

func (r RateSpec) String() string {
	switch {
	case r.Trace != nil:
		return fmt.Sprintf("trace %s (mean %s)", filepath.Base(r.Trace.Path), r.Trace.Mean())
	case len(r.Steps) > 0:
		var s []string
		for _, st := range r.Steps {
			s = append(s, st.Rate.String()+"/"+st.For.D().String())
		}
		return "schedule " + strings.Join(s, " → ")
	}
	return r.Constant.String()
}

type rateDoc struct {
	Rate      Rate       `yaml:"rate"`
	Schedule  []RateStep `yaml:"schedule"`
	Oscillate *struct {
		Low    Rate     `yaml:"low"`
		High   Rate     `yaml:"high"`
		Period Duration `yaml:"period"`
		Duty   *Percent `yaml:"duty"`
	} `yaml:"oscillate"`
	Trace string `yaml:"trace"`
}

// UnmarshalYAML reads "rate: 2mbit", "rate: {schedule: [{rate: 1mbit, for: 2s}, ...]}",
// "rate: {oscillate: {low: 1mbit, high: 1.5mbit, period: 4s, duty: 50%}}" or
// "rate: {trace: FILE}".
func (r *RateSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParseRate(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*r = RateSpec{Constant: v}
		return nil
	}
	var d rateDoc
	if err := strictDecode(n, &d); err != nil {
		return fmt.Errorf("line %d: rate: %w", n.Line, err)
	}
	v := RateSpec{Constant: d.Rate, Steps: d.Schedule}
	if o := d.Oscillate; o != nil {
		duty := 0.5
		if o.Duty != nil {
			duty = o.Duty.Fraction()
		}
		if o.Period <= 0 || duty <= 0 || duty >= 1 {
			return fmt.Errorf("line %d: oscillate needs a period and a duty strictly between 0 and 100%%", n.Line)
		}
		if len(v.Steps) > 0 {
			return fmt.Errorf("line %d: give either schedule or oscillate", n.Line)
		}
		v.Steps = Oscillate(o.Low, o.High, o.Period.D(), duty).Steps
	}
	if d.Trace != "" {
		v.Trace = &Trace{Path: d.Trace}
	}
	*r = v
	return nil
}

// MarshalYAML writes the constant form, or the schedule, or the trace path.
func (r RateSpec) MarshalYAML() (any, error) {
	switch {
	case r.Trace != nil:
		return map[string]string{"trace": r.Trace.Path}, nil
	case len(r.Steps) > 0:
		return map[string][]RateStep{"schedule": r.Steps}, nil
	}
	return r.Constant.String(), nil
}

// load reads a trace named in a profile file.
func (r *RateSpec) load(dir string) error {
	if r.Trace == nil || len(r.Trace.Millis) > 0 {
		return nil
	}
	path := r.Trace.Path
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	t, err := LoadTrace(path)
	if err != nil {
		return err
	}
	*r.Trace = *t
	return nil
}

// Loss is a random loss model. Zero is no loss.
type Loss struct {
	// Model is "bernoulli" (independent losses, the default) or "gilbert-elliott"
	// (a two-state Markov chain: losses come in bursts).
	Model string `yaml:"model,omitempty"`
	// P is the Bernoulli loss probability; for Gilbert-Elliott it is the
	// probability of moving from the good to the bad state per packet.
	P Percent `yaml:"p,omitempty"`
	// R is the Gilbert-Elliott probability of moving from bad back to good.
	R Percent `yaml:"r,omitempty"`
	// LossGood and LossBad are the loss probabilities in each state
	// (netem's 1-k and 1-h). LossBad defaults to 100%.
	LossGood Percent  `yaml:"loss_good,omitempty"`
	LossBad  *Percent `yaml:"loss_bad,omitempty"`
	// Mean and Burst are a shorthand for Gilbert-Elliott: the long-run loss share
	// and the mean burst length in packets (then LossGood=0, LossBad=100%).
	Mean  Percent `yaml:"mean,omitempty"`
	Burst float64 `yaml:"burst,omitempty"`
}

// Bernoulli is independent random loss of p percent.
func Bernoulli(p Percent) Loss { return Loss{P: p} }

// GilbertElliott loses mean percent of packets in bursts of burst packets on
// average.
func GilbertElliott(mean Percent, burst float64) Loss {
	return Loss{Model: "gilbert-elliott", Mean: mean, Burst: burst}
}

// IsZero reports no loss.
func (l Loss) IsZero() bool { return l.MeanLoss() == 0 }

func (l Loss) ge() bool {
	switch strings.ToLower(l.Model) {
	case "gilbert-elliott", "gilbert_elliott", "ge", "gemodel", "gilbert":
		return true
	}
	return false
}

// Validate checks the model and its numbers.
func (l Loss) Validate() error {
	switch strings.ToLower(l.Model) {
	case "", "bernoulli", "random":
		if l.R != 0 || l.Mean != 0 || l.Burst != 0 || l.LossBad != nil || l.LossGood != 0 {
			return errors.New("loss: r, mean, burst, loss_good and loss_bad belong to model gilbert-elliott")
		}
		return nil
	}
	if !l.ge() {
		return fmt.Errorf("loss model %q: want bernoulli or gilbert-elliott", l.Model)
	}
	if l.Mean > 0 || l.Burst > 0 {
		if l.P != 0 || l.R != 0 {
			return errors.New("loss: give either mean and burst, or p and r")
		}
		if l.Burst < 1 {
			return errors.New("loss: burst is a mean burst length in packets, at least 1")
		}
		if l.Mean >= 100 {
			return errors.New("loss: mean must be below 100%")
		}
		return nil
	}
	if l.P > 0 && l.R <= 0 {
		return errors.New("loss: gilbert-elliott needs r > 0 (else the bad state never ends)")
	}
	return nil
}

// GEParams returns the Gilbert-Elliott chain: p (good→bad), r (bad→good), and the
// loss probability in each state, all as fractions. For Bernoulli loss it returns a
// chain that stays good and loses P there.
func (l Loss) GEParams() (p, r, lossGood, lossBad float64) {
	if !l.ge() {
		return 0, 1, l.P.Fraction(), 0
	}
	lossBad = 1
	if l.LossBad != nil {
		lossBad = l.LossBad.Fraction()
	}
	if l.Mean > 0 || l.Burst > 0 {
		m := l.Mean.Fraction()
		r = 1 / l.Burst
		p = m * r / (1 - m)
		return p, r, 0, 1
	}
	return l.P.Fraction(), l.R.Fraction(), l.LossGood.Fraction(), lossBad
}

// MeanLoss is the long-run share of packets lost (0..1).
func (l Loss) MeanLoss() float64 {
	p, r, lg, lb := l.GEParams()
	if p+r == 0 {
		return lg
	}
	bad := p / (p + r)
	return (1-bad)*lg + bad*lb
}

func (l Loss) String() string {
	if !l.ge() {
		return trimFloat(float64(l.P)) + "%"
	}
	p, r, lg, lb := l.GEParams()
	return fmt.Sprintf("gilbert-elliott p=%.4g%% r=%.4g%% loss_good=%.4g%% loss_bad=%.4g%% (mean %.3g%%)",
		p*100, r*100, lg*100, lb*100, l.MeanLoss()*100)
}

// UnmarshalYAML reads "loss: 1%" (Bernoulli) or a mapping with a model.
func (l *Loss) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParsePercent(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*l = Loss{P: v}
		return nil
	}
	type plain Loss
	var v plain
	if err := strictDecode(n, &v); err != nil {
		return fmt.Errorf("line %d: loss: %w", n.Line, err)
	}
	*l = Loss(v)
	return nil
}
