package dash

import "encoding/xml"

// The MPD subset Streambed writes. Field order is XML order: the schema fixes the
// order of child elements, and attribute order is kept stable for golden files.

const (
	mpdNamespace      = "urn:mpeg:dash:schema:mpd:2011"
	profileLive       = "urn:mpeg:dash:profile:isoff-live:2011"
	schemeUTCHTTPISO  = "urn:mpeg:dash:utc:http-iso:2014"
	schemeRole        = "urn:mpeg:dash:role:2011"
	schemeAudioConfig = "urn:mpeg:dash:23003:3:audio_channel_configuration:2011"
)

type mpdXML struct {
	XMLName                    xml.Name `xml:"MPD"`
	Xmlns                      string   `xml:"xmlns,attr"`
	Profiles                   string   `xml:"profiles,attr"`
	Type                       string   `xml:"type,attr"`
	AvailabilityStartTime      string   `xml:"availabilityStartTime,attr,omitempty"`
	PublishTime                string   `xml:"publishTime,attr,omitempty"`
	MediaPresentationDuration  string   `xml:"mediaPresentationDuration,attr,omitempty"`
	MinimumUpdatePeriod        string   `xml:"minimumUpdatePeriod,attr,omitempty"`
	TimeShiftBufferDepth       string   `xml:"timeShiftBufferDepth,attr,omitempty"`
	SuggestedPresentationDelay string   `xml:"suggestedPresentationDelay,attr,omitempty"`
	MaxSegmentDuration         string   `xml:"maxSegmentDuration,attr,omitempty"`
	MinBufferTime              string   `xml:"minBufferTime,attr"`
	// ServiceDescriptions come before the Periods in the schema's sequence.
	ServiceDescriptions []serviceDescriptionXML `xml:"ServiceDescription"`
	Periods             []periodXML             `xml:"Period"`
	UTCTimings          []descriptorXML         `xml:"UTCTiming"`
}

type periodXML struct {
	ID             string             `xml:"id,attr"`
	Start          string             `xml:"start,attr"`
	AdaptationSets []adaptationSetXML `xml:"AdaptationSet"`
}

type adaptationSetXML struct {
	ID               int             `xml:"id,attr"`
	ContentType      string          `xml:"contentType,attr"`
	Lang             string          `xml:"lang,attr,omitempty"`
	MimeType         string          `xml:"mimeType,attr"`
	SegmentAlignment bool            `xml:"segmentAlignment,attr"`
	StartWithSAP     int             `xml:"startWithSAP,attr"`
	Par              string          `xml:"par,attr,omitempty"`
	MaxWidth         int             `xml:"maxWidth,attr,omitempty"`
	MaxHeight        int             `xml:"maxHeight,attr,omitempty"`
	MaxFrameRate     string          `xml:"maxFrameRate,attr,omitempty"`
	AudioChannels    []descriptorXML `xml:"AudioChannelConfiguration"`
	// ProducerReferenceTime belongs to RepresentationBaseType's sequence, which comes
	// before AdaptationSet's own elements (Role, SegmentTemplate, Representation).
	ProducerReferenceTimes []producerReferenceTimeXML `xml:"ProducerReferenceTime"`
	Roles                  []descriptorXML            `xml:"Role"`
	SegmentTemplate        *segmentTemplateXML        `xml:"SegmentTemplate"`
	Representations        []representationXML        `xml:"Representation"`
}

type representationXML struct {
	ID                string              `xml:"id,attr"`
	Bandwidth         int                 `xml:"bandwidth,attr"`
	Codecs            string              `xml:"codecs,attr"`
	Width             int                 `xml:"width,attr,omitempty"`
	Height            int                 `xml:"height,attr,omitempty"`
	FrameRate         string              `xml:"frameRate,attr,omitempty"`
	AudioSamplingRate string              `xml:"audioSamplingRate,attr,omitempty"`
	AudioChannels     []descriptorXML     `xml:"AudioChannelConfiguration"`
	SegmentTemplate   *segmentTemplateXML `xml:"SegmentTemplate"`
}

type descriptorXML struct {
	SchemeIDURI string `xml:"schemeIdUri,attr"`
	Value       string `xml:"value,attr,omitempty"`
}

type segmentTemplateXML struct {
	Timescale              uint32  `xml:"timescale,attr"`
	PresentationTimeOffset uint64  `xml:"presentationTimeOffset,attr,omitempty"` // 0 is the default
	Duration               *uint64 `xml:"duration,attr"`
	StartNumber            *uint64 `xml:"startNumber,attr"` // explicit: the default is 1, live starts at 0
	Initialization         string  `xml:"initialization,attr"`
	Media                  string  `xml:"media,attr"`
	// Low-latency DASH only: seconds before a segment's end that it may be requested,
	// and "false" (a response may still be growing).
	AvailabilityTimeOffset   string              `xml:"availabilityTimeOffset,attr,omitempty"`
	AvailabilityTimeComplete string              `xml:"availabilityTimeComplete,attr,omitempty"`
	Timeline                 *segmentTimelineXML `xml:"SegmentTimeline"`
}

// serviceDescriptionXML is the latency a low-latency MPD asks players to keep
// (milliseconds) and the playback rates to steer it with.
type serviceDescriptionXML struct {
	ID           uint32          `xml:"id,attr"`
	Latency      latencyXML      `xml:"Latency"`
	PlaybackRate playbackRateXML `xml:"PlaybackRate"`
}

type latencyXML struct {
	ReferenceID uint32 `xml:"referenceId,attr"` // the ProducerReferenceTime it is measured against
	Target      int64  `xml:"target,attr"`
	Min         int64  `xml:"min,attr"`
	Max         int64  `xml:"max,attr"`
}

type playbackRateXML struct {
	Min string `xml:"min,attr"`
	Max string `xml:"max,attr"`
}

// producerReferenceTimeXML maps a media time to the wall-clock time it was made at.
type producerReferenceTimeXML struct {
	ID               uint32         `xml:"id,attr"`
	Type             string         `xml:"type,attr"`
	WallClockTime    string         `xml:"wallClockTime,attr"`
	PresentationTime uint64         `xml:"presentationTime,attr"`
	UTCTiming        *descriptorXML `xml:"UTCTiming"`
}

type segmentTimelineXML struct {
	S []sXML `xml:"S"`
}

// sXML is one run of equal, contiguous segments: r repeats after the first.
type sXML struct {
	T *uint64 `xml:"t,attr"`
	D uint64  `xml:"d,attr"`
	R int     `xml:"r,attr,omitempty"`
}
