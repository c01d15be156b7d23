// Routes one module serves on an HTTP listener another module owns (the Anthropic Messages API on the OpenAI
// listener): the owner offers every request to its mounts first, in order, and serves it itself when none takes it.

import type { IncomingMessage, ServerResponse } from 'node:http';

export interface HttpMount {
  /**
   * Takes the request when it is one of the mount's routes (decided synchronously from the method, URL and
   * headers; the body is not read yet) and answers it completely; false leaves it to the listener's owner.
   */
  handle(request: IncomingMessage, response: ServerResponse): boolean;
}
