import { type Context, context, type Link, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { UsageError } from '../errors.js';
import { tool } from '../version.js';

/**
 * The service's spans. Without a registered tracer provider (no OTLP endpoint configured) the
 * OpenTelemetry API hands out spans that record nothing: the cost is a few function calls.
 */
export const tracer = trace.getTracer(tool.name, tool.version);

export interface Tracing {
  /** Sends the spans still buffered, then stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Starts exporting spans over OTLP/HTTP when the standard variables ask for it
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, with their headers, timeout and
 * `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` as the specification defines them); nothing otherwise, or
 * when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Incoming `traceparent` headers are then
 * honoured (W3C Trace Context).
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol && protocol !== 'http/json')
    throw new UsageError(
      `OTEL_EXPORTER_OTLP_PROTOCOL is ${JSON.stringify(protocol.slice(0, 40))}, but this service exports traces over OTLP/HTTP with JSON only: set it to http/json or leave it unset`,
    );
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, resources] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const resource = resources
    .resourceFromAttributes({
      'service.name': 'partner-certification-service',
      'service.version': tool.version,
    })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The W3C Trace Context propagator and the AsyncLocalStorage context manager: a span started while
  // a request is served is a child of that request's span.
  provider.register();
  return { shutdown: () => provider.shutdown() };
}

/** Runs `work` in a span (child of the active one, or of `parent`); the span ends when it settles. */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; links?: Link[] },
  work: () => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.INTERNAL, ...options }, parent, async (span) => {
    try {
      return await work();
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message?.slice(0, 200) });
      throw error;
    } finally {
      span.end();
    }
  });
}
