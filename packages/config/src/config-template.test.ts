import { describe, expect, it } from '@jest/globals';
import { renderConfigTemplate } from './config-template.js';
import { ConfigError } from './errors.js';
import { formatIssue } from './format-issue.js';
import { parseConfigText } from './load-config.js';

describe('renderConfigTemplate', () => {
  it('produces a config that passes validation with the given public URL', () => {
    const text = renderConfigTemplate({ publicUrl: 'http://192.0.2.7:19091' });
    const result = parseConfigText(text, 'edge.yaml');
    if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
    expect(result.config.bootstrap.public_url).toBe('http://192.0.2.7:19091');
    expect(result.config.edge.listen).toBe('0.0.0.0:19090');
    expect(result.config.nodes).toEqual([]);
  });

  it('honours edge id, listen and data dir options', () => {
    const text = renderConfigTemplate({
      publicUrl: 'https://edge.example.com',
      edgeId: 'edge-7',
      listen: '0.0.0.0:29090',
      dataDir: '/var/lib/iop',
    });
    const result = parseConfigText(text, 'edge.yaml');
    if (!result.ok) throw new Error('invalid template');
    expect(result.config.edge).toMatchObject({
      id: 'edge-7',
      listen: '0.0.0.0:29090',
      data_dir: '/var/lib/iop',
    });
  });

  it('writes the admin token when given one, and an empty one otherwise', () => {
    const withToken = parseConfigText(
      renderConfigTemplate({ publicUrl: 'http://192.0.2.7:19091', adminToken: 'iop-admin-abc_DEF-123' }),
      'edge.yaml',
    );
    if (!withToken.ok) throw new Error(withToken.issues.map(formatIssue).join('\n'));
    expect(withToken.config.refresh.admin_token).toBe('iop-admin-abc_DEF-123');
    expect(withToken.config.http.allowed_hosts).toEqual([]);
    const without = parseConfigText(
      renderConfigTemplate({ publicUrl: 'http://192.0.2.7:19091' }),
      'edge.yaml',
    );
    if (!without.ok) throw new Error('invalid template');
    expect(without.config.refresh.admin_token).toBe('');
  });

  it.each([
    [{ publicUrl: 'http://x', adminToken: 'has "quote' }],
    [{ publicUrl: 'edge.example.com' }],
    [{ publicUrl: 'http://x', listen: 'nowhere' }],
    [{ publicUrl: 'http://x', edgeId: 'has space' }],
    [{ publicUrl: 'http://x', dataDir: '' }],
  ])('rejects bad options with a ConfigError %j', (options) => {
    expect(() => renderConfigTemplate(options)).toThrow(ConfigError);
  });
});
