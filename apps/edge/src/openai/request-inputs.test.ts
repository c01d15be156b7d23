import { describe, expect, it } from '@jest/globals';

import { OpenAIHttpError } from './openai-error.js';
import { checkImageUrlCount, checkImageUrls, imageInput } from './request-inputs.js';

function refusal(fn: () => unknown): OpenAIHttpError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OpenAIHttpError);
    return error as OpenAIHttpError;
  }
  throw new Error('not refused');
}

describe('imageInput', () => {
  it('takes a data: URL inline and an http(s) URL as is', () => {
    expect(imageInput('data:image/png;base64,iVBORw0K', 'p')).toEqual({ base64: 'iVBORw0K' });
    expect(imageInput('https://a.example/x.png?y=1', 'p')).toEqual({ url: 'https://a.example/x.png?y=1' });
    expect(imageInput('HTTP://a.example/x.png', 'p')).toEqual({ url: 'HTTP://a.example/x.png' });
  });

  it.each(['ftp://a.example/x.png', 'file:///etc/passwd', 'https://', 'a.png', 'data:image/png,raw'])(
    'refuses %s',
    (url) => {
      expect(refusal(() => imageInput(url, 'messages[0].content[1].image_url')).param).toBe(
        'messages[0].content[1].image_url',
      );
    },
  );
});

describe('checkImageUrlCount', () => {
  const withUrls = (...counts: number[]) => ({
    messages: counts.map((count) => ({
      imageUrls: Array.from({ length: count }, (_, index) => `https://a.example/${index}.png`),
    })),
  });

  it('counts the URLs of all messages together against the limit, naming it', () => {
    expect(() => checkImageUrlCount('m', withUrls(8, 8), 16)).not.toThrow();
    const error = refusal(() => checkImageUrlCount('vision', withUrls(8, 9), 16));
    expect(error.status).toBe(400);
    expect(error.code).toBe('too_many_image_urls');
    expect(error.message).toContain('17 image URLs');
    expect(error.message).toContain("model 'vision' takes at most 16");
    expect(error.message).toContain('image_limits.max_urls');
  });
});

describe('checkImageUrls', () => {
  it('lets OpenAI-compatible backends take the URL without fetching', () => {
    expect(checkImageUrls('m', ['openai_compat'], false)).toBe(false);
    expect(checkImageUrls('m', ['openai_compat'], true)).toBe(false);
  });

  it('asks the node to fetch for Ollama only when the model allows it', () => {
    expect(checkImageUrls('m', ['ollama', 'openai_compat'], true)).toBe(true);
    const error = refusal(() => checkImageUrls('vision', ['openai_compat', 'ollama'], false));
    expect(error.message).toContain("Model 'vision'");
    expect(error.message).toContain('Ollama');
    expect(error.message).toContain('fetch_image_urls');
  });

  it('refuses for a CLI backend whatever the model sets, and when the backends are unknown', () => {
    expect(refusal(() => checkImageUrls('agent', ['cli'], true)).message).toContain('CLI agent');
    expect(() => checkImageUrls('m', [], true)).toThrow(OpenAIHttpError);
  });
});
