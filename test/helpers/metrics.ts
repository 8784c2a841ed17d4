import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';

/** A metric of the app's registry, its series summed (a gauge or an unlabelled counter: its value). */
export async function metricValue(app: FastifyInstance, name: string): Promise<number> {
  const metric = app.metrics.registry.getSingleMetric(name);
  assert.ok(metric, `the metric ${name} exists`);
  return (await metric.get()).values.reduce((sum, value) => sum + value.value, 0);
}
