/**
 * A Model Context Protocol server over a set of model-facing tools (docs/mcp.md): the same names,
 * descriptions, JSON Schemas and rendered text as the library's tools, so an MCP-speaking agent
 * sees exactly what a TypeScript harness would show its model.
 *
 * The low-level `Server` is used rather than `McpServer.tool()`: the tools already carry their
 * JSON Schema (generated from the zod schema that validates them), and their own validation must
 * answer bad arguments with the library's messages, not the SDK's.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ModelTool } from '../tool/types.js';

/** The server's name and version in the MCP handshake. */
export interface McpServerInfo {
  name: string;
  version: string;
}

/** Builds an MCP server that lists `tools` and calls them; `instructions` is the system-prompt text. */
export function createToolServer(info: McpServerInfo, tools: readonly ModelTool[], instructions: string): Server {
  const server = new Server(info, { capabilities: { tools: {}, logging: {} }, instructions });
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as { type: 'object' },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = byName.get(request.params.name);
    if (!tool) return errorResult(`unknown tool: ${request.params.name}`);
    try {
      const result = await tool.execute(request.params.arguments ?? {}, { signal: extra.signal });
      return {
        content: [{ type: 'text', text: result.text }],
        isError: result.isError,
        structuredContent: { details: result.details as Record<string, unknown> },
      };
    } catch (error) {
      // A tool rejects only when the call was cancelled; the client has stopped waiting for it.
      return errorResult(error instanceof Error ? error.message : String(error));
    }
  });
  return server;
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
