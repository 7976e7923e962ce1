package llm_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"testing"

	"github.com/throttlekit/throttle/httpthrottle/llm"
)

func pngData(w, h int) string {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// wavData is seconds of 16 kHz 16-bit mono silence, as a WAV file.
func wavData(seconds int) string {
	const rate = 32000 // bytes a second
	data := make([]byte, seconds*rate)
	var h bytes.Buffer
	h.WriteString("RIFF")
	binary.Write(&h, binary.LittleEndian, uint32(36+len(data)))
	h.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(rate), uint16(2), uint16(16)} {
		binary.Write(&h, binary.LittleEndian, v)
	}
	h.WriteString("data")
	binary.Write(&h, binary.LittleEndian, uint32(len(data)))
	h.Write(data)
	return base64.StdEncoding.EncodeToString(h.Bytes())
}

// TestEstimateMedia: images, audio and documents count by the vendors'
// rules, whatever their size in bytes. Each body is one message (3 tokens)
// plus the reply (3).
func TestEstimateMedia(t *testing.T) {
	openai := func(url, detail string) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":%q,"detail":%q}}]}],"max_tokens":1}`, url, detail)
	}
	for _, tt := range []struct {
		name string
		body string
		want int64
	}{
		{"openai low", openai("data:image/png;base64,"+pngData(4000, 3000), "low"), 85},
		{"openai 256x256", openai("data:image/png;base64,"+pngData(256, 256), "high"), 85 + 170},
		{"openai 1024x1024", openai("data:image/png;base64,"+pngData(1024, 1024), "auto"), 85 + 4*170},
		{"openai 2048x1024: 1536x768, 3x2 tiles", openai("data:image/png;base64,"+pngData(2048, 1024), "high"), 85 + 6*170},
		{"openai 4000x3000: 1024x768", openai("data:image/png;base64,"+pngData(4000, 3000), "high"), 85 + 4*170},
		{"openai url of unknown size", openai("https://example.com/cat.png", "high"), 85 + 6*170},
		{"responses input_image", fmt.Sprintf(`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,%s"}]}]}`, pngData(512, 512)), 85 + 170},
		{"anthropic 1000x1000", fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]}]}`, pngData(1000, 1000)), 1334},
		{"anthropic 3000x3000: fitted to 1568", fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]}]}`, pngData(3000, 3000)), 1600},
		{"gemini small", fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":%q}}]}]}`, pngData(300, 300)), 258},
		{"gemini 1536x800: 2x2 tiles", fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"inline_data":{"mime_type":"image/png","data":%q}}]}]}`, pngData(1536, 800)), 4 * 258},
		{"openai audio, 3 s of wav", fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":%q,"format":"wav"}}]}]}`, wavData(3)), 30},
		{"gemini audio, 2 s of wav", fmt.Sprintf(`{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":%q}}]}]}`, wavData(2)), 64},
		{"anthropic pdf, 2 pages", fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":%q}}]}]}`,
			base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n1 0 obj <</Type /Pages /Kids [2 0 R 3 0 R]>>\n2 0 obj <</Type /Page>>\n3 0 obj <</Type/Page>>\n"))), 6000},
	} {
		in, _, ok := llm.Config{}.Estimate([]byte(tt.body))
		if !ok || in != tt.want+6 {
			t.Errorf("%s: %d input tokens (%v), want %d + 6 of framing", tt.name, in, ok, tt.want)
		}
	}
}

// TestEstimateTokenizer: a Tokenizer counts every piece of text; names and
// framing are left to the estimator.
func TestEstimateTokenizer(t *testing.T) {
	words := tokenizerFunc(func(s string) int { return len(bytes.Fields([]byte(s))) })
	body := `{"model":"gpt-4o","system":"be brief","messages":[{"role":"user","name":"al","content":"one two three"}],"tools":[{"name":"f","input_schema":{"properties":{"city":{"type":"string"}}}}],"max_tokens":9}`
	in, out, _ := llm.Config{Tokenizer: words}.Estimate([]byte(body))
	// system 2, message 3 + 1 (name) + "al" 1 + 3, reply 3, tools: name
	// key, "f", input_schema, properties, city, type key skipped, "string".
	if want := int64(2 + 3 + 1 + 1 + 3 + 3 + 6); in != want || out != 9 {
		t.Errorf("Estimate = %d, %d; want %d, 9", in, out, want)
	}
}

type tokenizerFunc func(string) int

func (f tokenizerFunc) CountTokens(s string) int { return f(s) }
