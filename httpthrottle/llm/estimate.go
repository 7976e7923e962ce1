package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	_ "image/gif" // image sizes in prompts
	_ "image/jpeg"
	_ "image/png"
	"strings"
	"unicode/utf8"
)

// Tokenizer counts the tokens of prompt text as a model's tokenizer does.
// Config uses it, when set, for every piece of text of a request; the module
// github.com/throttlekit/throttle/tiktoken provides OpenAI's encodings.
// CountTokens must be safe for concurrent use.
type Tokenizer interface {
	CountTokens(text string) int
}

// Per-message and per-request overheads, as OpenAI documents them for its
// chat models (each message is framed by 3 tokens, a name adds 1, and the
// reply is primed with 3) and as the other vendors' counts come close to.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensPerReply   = 3
)

// Image, audio and file costs by the vendors' documented rules.
const (
	// OpenAI: a low-detail image is 85 tokens; otherwise the image is
	// fitted in 2048x2048, its short side scaled to 768, and each 512-pixel
	// tile costs 170 on top of the 85. An image of unknown size is counted
	// as the largest (6 tiles).
	openAIImageBase = 85
	openAIImageTile = 170
	openAIImageMax  = openAIImageBase + 6*openAIImageTile
	// Anthropic: width x height / 750, the image first fitted so that its
	// long side is at most 1568 pixels: about 1600 tokens at most.
	anthropicImageMax = 1600
	// Gemini: 258 tokens for an image of at most 384 pixels a side, else 258
	// per 768x768 tile.
	geminiImageTile = 258
	// Audio: OpenAI counts about 10 tokens a second of input audio, Gemini
	// 32; a duration not in the data is guessed from its size at 128 kbit/s.
	openAIAudioPerSecond = 10
	geminiAudioPerSecond = 32
	audioBytesPerSecond  = 16000
	// Documents (PDF): 1500 to 3000 tokens a page by Anthropic's rule; the
	// high end, as pages carry an image each too.
	tokensPerPage = 3000
)

// estimator adds up the tokens of a decoded JSON request body.
type estimator struct {
	c      *Config
	chars  int64 // characters of text, when there is no Tokenizer
	tokens int64 // tokens of text counted by the Tokenizer, and media
}

func (e *estimator) text(s string) {
	switch {
	case e.c.Tokenizer != nil:
		e.tokens += int64(e.c.Tokenizer.CountTokens(s))
	case e.c.CharsPerToken > 0:
		e.chars += int64(utf8.RuneCountInString(s))
	default:
		e.tokens += approxTokens(s)
	}
}

func (e *estimator) total() int64 {
	return e.tokens + divUp(e.chars, e.c.charsPerToken())
}

// body estimates the top-level object of a request.
func (e *estimator) body(v map[string]any) {
	for k, x := range v {
		switch k {
		case "messages", "contents":
			// Chat Completions and Anthropic messages; Gemini contents.
			msgs, ok := x.([]any)
			if !ok {
				e.value(x, k)
				continue
			}
			for _, m := range msgs {
				e.message(m)
			}
			e.tokens += tokensPerReply
		case "input":
			// The Responses API: a string or a list of items.
			if items, ok := x.([]any); ok {
				for _, m := range items {
					e.message(m)
				}
				e.tokens += tokensPerReply
				continue
			}
			e.value(x, k)
		case "tools", "functions", "tool_config", "response_format", "text":
			// Tool definitions and schemas: their keys are prompt text too.
			e.schema(x)
		default:
			e.value(x, k)
		}
	}
}

func (e *estimator) message(m any) {
	e.tokens += tokensPerMessage
	if o, ok := m.(map[string]any); ok {
		if _, named := o["name"]; named {
			e.tokens += tokensPerName
		}
	}
	e.value(m, "")
}

// schema counts every key and string of a tool definition.
func (e *estimator) schema(v any) {
	switch v := v.(type) {
	case string:
		e.text(v)
	case []any:
		for _, x := range v {
			e.schema(x)
		}
	case map[string]any:
		for k, x := range v {
			if k != "type" {
				e.text(k)
			}
			e.schema(x)
		}
	}
}

// value counts the text of v, found under key, and the media it holds.
func (e *estimator) value(v any, key string) {
	switch v := v.(type) {
	case string:
		switch key {
		case "model", "role", "type", "detail", "media_type", "mime_type", "mimeType", "format", "filename", "file_id", "id", "tool_call_id", "tool_use_id", "cache_control":
			return
		}
		if strings.HasPrefix(v, "data:") {
			// A data URL outside a part we know: count its media, not its text.
			e.media(v, "")
			return
		}
		e.text(v)
	case []any:
		for _, x := range v {
			e.value(x, key)
		}
	case map[string]any:
		if e.part(v) {
			return
		}
		for k, x := range v {
			e.value(x, k)
		}
	}
}

// part counts a content part that is an image, audio or a file by the
// vendor's rule, and reports whether it was one.
func (e *estimator) part(v map[string]any) bool {
	typ, _ := v["type"].(string)
	switch typ {
	case "image_url":
		// OpenAI Chat Completions: {"image_url": {"url", "detail"}}.
		iu, _ := v["image_url"].(map[string]any)
		url, _ := iu["url"].(string)
		detail, _ := iu["detail"].(string)
		e.tokens += openAIImage(url, detail)
		return true
	case "input_image":
		// OpenAI Responses: {"image_url": "...", "detail"}.
		url, _ := v["image_url"].(string)
		detail, _ := v["detail"].(string)
		e.tokens += openAIImage(url, detail)
		return true
	case "input_audio":
		a, _ := v["input_audio"].(map[string]any)
		data, _ := a["data"].(string)
		e.tokens += audioSeconds(data, openAIAudioPerSecond)
		return true
	case "image":
		// Anthropic: {"source": {"type": "base64", "data"} or {"type": "url"}}.
		src, _ := v["source"].(map[string]any)
		data, _ := src["data"].(string)
		e.tokens += anthropicImage(data)
		return true
	case "document", "file", "input_file":
		// Anthropic documents, OpenAI files: a PDF's pages; plain text as text.
		var data string
		if src, ok := v["source"].(map[string]any); ok {
			if src["type"] == "text" {
				d, _ := src["data"].(string)
				e.text(d)
				return true
			}
			data, _ = src["data"].(string)
		}
		if f, ok := v["file"].(map[string]any); ok {
			data, _ = f["file_data"].(string)
		}
		if d, ok := v["file_data"].(string); ok {
			data = d
		}
		e.tokens += pdfTokens(data)
		return true
	}
	// Gemini: {"inlineData": {"mimeType", "data"}} (or inline_data).
	for _, k := range [...]string{"inlineData", "inline_data"} {
		if d, ok := v[k].(map[string]any); ok {
			mt, _ := d["mimeType"].(string)
			if mt == "" {
				mt, _ = d["mime_type"].(string)
			}
			data, _ := d["data"].(string)
			e.media(data, mt)
			return true
		}
	}
	return false
}

// media counts base64 data (or a data URL) of the given MIME type the
// Gemini way, the rule for media that no part names.
func (e *estimator) media(data, mt string) {
	if rest, ok := strings.CutPrefix(data, "data:"); ok {
		mt, data, _ = strings.Cut(rest, ",")
		mt, _, _ = strings.Cut(mt, ";")
	}
	switch {
	case strings.HasPrefix(mt, "image/"):
		w, h, ok := imageSize(data)
		if !ok || w <= 384 && h <= 384 {
			e.tokens += geminiImageTile
			return
		}
		e.tokens += geminiImageTile * divUp(int64(w), 768) * divUp(int64(h), 768)
	case strings.HasPrefix(mt, "audio/"):
		e.tokens += audioSeconds(data, geminiAudioPerSecond)
	case mt == "application/pdf":
		e.tokens += pdfTokens(data)
	default:
		e.tokens += divUp(int64(base64.StdEncoding.DecodedLen(len(data))), 4)
	}
}

// openAIImage is the tokens of an image by OpenAI's rule.
func openAIImage(url, detail string) int64 {
	if detail == "low" {
		return openAIImageBase
	}
	_, data, isData := strings.Cut(url, ";base64,")
	if !isData || !strings.HasPrefix(url, "data:") {
		return openAIImageMax
	}
	w, h, ok := imageSize(data)
	if !ok || w <= 0 || h <= 0 {
		return openAIImageMax
	}
	fw, fh := float64(w), float64(h)
	if s := 2048 / max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := 768 / min(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	tiles := divUp(int64(fw+0.999999), 512) * divUp(int64(fh+0.999999), 512)
	return openAIImageBase + openAIImageTile*tiles
}

// anthropicImage is the tokens of a base64 image by Anthropic's rule.
func anthropicImage(data string) int64 {
	w, h, ok := imageSize(data)
	if !ok || w <= 0 || h <= 0 {
		return anthropicImageMax
	}
	fw, fh := float64(w), float64(h)
	if s := 1568 / max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	return min(divUp(int64(fw*fh), 750), anthropicImageMax)
}

// imageSize reads the width and height of a base64-encoded PNG, JPEG or GIF
// from the start of its data.
func imageSize(data string) (w, h int, ok bool) {
	head, err := decodeHead(data, 64<<10)
	if err != nil && len(head) == 0 {
		return 0, 0, false
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// decodeHead decodes up to n bytes of base64 from the start of data.
func decodeHead(data string, n int) ([]byte, error) {
	m := min(len(data), base64.StdEncoding.EncodedLen(n))
	m -= m % 4
	return base64.StdEncoding.DecodeString(data[:m])
}

// audioSeconds is the tokens of base64 audio at perSecond tokens a second:
// the duration of a WAV file from its header, otherwise from its size.
func audioSeconds(data string, perSecond int64) int64 {
	size := int64(base64.StdEncoding.DecodedLen(len(data))) - int64(len(data)-len(strings.TrimRight(data, "=")))
	if head, _ := decodeHead(data, 64); len(head) >= 44 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE" {
		if rate := int64(binary.LittleEndian.Uint32(head[28:32])); rate > 0 {
			return max(divUp((size-44)*perSecond, rate), 1)
		}
	}
	return max(divUp(size*perSecond, audioBytesPerSecond), 1)
}

// pdfTokens is the tokens of a base64 PDF: its pages, counted by their
// "/Type /Page" objects, else one page per 100 KB.
func pdfTokens(data string) int64 {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return tokensPerPage * max(divUp(int64(len(data)), 100<<10), 1)
	}
	var pages int64
	for _, sep := range [...]string{"/Type /Page", "/Type/Page"} {
		for b := raw; ; {
			i := bytes.Index(b, []byte(sep))
			if i < 0 {
				break
			}
			b = b[i+len(sep):]
			if len(b) == 0 || b[0] != 's' {
				pages++
			}
		}
	}
	return tokensPerPage * max(pages, divUp(int64(len(raw)), 1<<20), 1)
}
