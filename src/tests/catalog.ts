import { invalidArgument } from "../platform/errors.ts";

/**
 * The 41 test subtypes the Openlayer platform and its SDKs know, each with the measurement a
 * threshold reads when it names none (docs/tests.md). Creating a test of any other subtype is a
 * 400. Which of them are measured on windows, and how, is src/tests/evaluation/measures.ts.
 */
const defaultMeasurements: Record<string, string> = {
  anomalousColumnCount: "anomalousColumnCount",
  characterLength: "characterLength",
  classImbalanceRatio: "classImbalanceRatio",
  expectColumnAToBeInColumnB: "expectColumnAToBeInColumnB",
  columnAverage: "columnAverage",
  columnDrift: "columnDrift",
  columnStatistic: "columnStatistic",
  columnValuesMatch: "columnValuesMatch",
  conflictingLabelRowCount: "conflictingLabelRowCount",
  containsPii: "containsPIIRowCount",
  containsValidUrl: "containsValidUrl",
  correlatedFeatureCount: "correlatedFeatureCount",
  customMetricThreshold: "value",
  duplicateRowCount: "duplicateRowCount",
  emptyFeature: "emptyFeature",
  emptyFeatureCount: "emptyFeatureCount",
  driftedFeatureCount: "driftedFeatureCount",
  featureMissingValues: "featureMissingValues",
  featureValueValidation: "featureValueValidation",
  greatExpectations: "greatExpectations",
  groupByColumnStatsCheck: "groupByColumnStatsCheck",
  illFormedRowCount: "illFormedRowCount",
  isCode: "isCode",
  isJson: "isJson",
  llmRubricThresholdV2: "criteria0MeanScore",
  labelDrift: "labelDrift",
  metricThreshold: "metricThreshold",
  newCategoryCount: "newCategoryCount",
  newLabelCount: "newLabelCount",
  nullRowCount: "nullRowCount",
  rowCount: "rowCount",
  ppScoreValueValidation: "ppScoreValueValidation",
  quasiConstantFeature: "quasiConstantFeature",
  quasiConstantFeatureCount: "quasiConstantFeatureCount",
  sqlQuery: "result",
  dtypeValidation: "dtypeValidation",
  sentenceLength: "sentenceLength",
  sizeRatio: "sizeRatio",
  specialCharactersRatio: "specialCharactersRatio",
  stringValidation: "stringValidation",
  trainValLeakageRowCount: "trainValLeakageRowCount",
};

export const subtypes: readonly string[] = Object.keys(defaultMeasurements);

/** The subtype, if it is one of the catalog's; otherwise a 400 that lists them. */
export function requireSubtype(subtype: string): string {
  if (!Object.hasOwn(defaultMeasurements, subtype)) throw invalidArgument(`subtype must be one of: ${subtypes.join(", ")}`);
  return subtype;
}

/** The measurement a threshold of `subtype` reads when it names none. */
export function defaultMeasurement(subtype: string): string {
  return defaultMeasurements[subtype] ?? subtype;
}

/**
 * The threshold a threshold that gives no operator and value gets: at least one row for rowCount;
 * otherwise none of what the measurement counts (a count of rows or columns that fail, a ratio,
 * a statistic at most 0). Documented in docs/tests.md; a test meant to check a statistic says its
 * bound.
 */
export function defaultCondition(measurement: string): { operator: ">" | "<="; value: number } {
  return measurement === "rowCount" ? { operator: ">", value: 0 } : { operator: "<=", value: 0 };
}
