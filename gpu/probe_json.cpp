#include "gpu/probe_json.hpp"

#include "core/json_value.hpp"
#include "gpu/detail/json_writer.hpp"

namespace llmrepro::gpu {

namespace {

using core::JsonValue;
using core::parse_json;

void write_value(JsonWriter& out, const core::ProbeValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value))
    out.value(*integer);
  else if (const auto* real = std::get_if<double>(&value))
    out.value(*real);
  else
    out.value(std::get<std::string>(value));
}

void write_params(JsonWriter& out, const std::vector<core::ProbeParam>& params) {
  out.begin_object();
  for (const auto& param : params) {
    out.key(param.name);
    write_value(out, param.value);
  }
  out.end_object();
}

void write_row(JsonWriter& out, const core::ProbeRow& row) {
  out.begin_object();
  out.key("variant");
  out.value(row.variant);
  out.key("params");
  write_params(out, row.params);
  out.key("elements");
  out.value(row.elements);
  out.key("changed_frac");
  out.value(row.changed_frac);
  out.key("max_abs");
  out.value(row.max_abs);
  out.key("max_ulp");
  out.value(row.max_ulp);
  out.key("ulp_histogram");
  out.begin_array();
  for (const auto count : row.ulp_histogram) out.value(count);
  out.end_array();
  out.key("fp32_changed_frac");
  if (row.fp32_changed_frac)
    out.value(*row.fp32_changed_frac);
  else
    out.null();
  out.key("measures");
  out.begin_object();
  for (const auto& measure : row.measures) {
    out.key(measure.name);
    out.value(measure.value);
  }
  out.end_object();
  // Optional: only rows that check repeatability carry a digest.
  if (!row.sha256.empty()) {
    out.key("sha256");
    out.value(row.sha256);
  }
  out.end_object();
}

void write_experiment(JsonWriter& out, const core::ProbeExperiment& experiment) {
  out.begin_object();
  out.key("id");
  out.value(experiment.id);
  out.key("title");
  out.value(experiment.title);
  out.key("status");
  out.value(core::to_string(experiment.status));
  out.key("held");
  write_params(out, experiment.held);
  out.key("varied");
  out.begin_array();
  for (const auto& name : experiment.varied) out.value(name);
  out.end_array();
  out.key("rows");
  out.begin_array();
  for (const auto& row : experiment.rows) write_row(out, row);
  out.end_array();
  out.key("notes");
  out.begin_array();
  for (const auto& note : experiment.notes) out.value(note);
  out.end_array();
  out.end_object();
}

// Reading: every accessor names the field it wanted, with its path.
class Reader {
public:
  bool failed() const { return !m_error.empty(); }
  const std::string& error() const { return m_error; }

  const JsonValue* member(const JsonValue& object, const std::string& path, const char* name,
                          JsonValue::Type type) {
    if (failed()) return nullptr;
    const JsonValue* value = object.find(name);
    if (value == nullptr) {
      m_error = "missing field '" + path + name + "'";
      return nullptr;
    }
    if (value->type != type) {
      m_error = "field '" + path + name + "' has the wrong type";
      return nullptr;
    }
    return value;
  }

  std::string text(const JsonValue& object, const std::string& path, const char* name) {
    const JsonValue* value = member(object, path, name, JsonValue::Type::string);
    return value ? value->string : std::string();
  }

  double number(const JsonValue& object, const std::string& path, const char* name) {
    const JsonValue* value = member(object, path, name, JsonValue::Type::number);
    return value ? value->number : 0.0;
  }

  std::int64_t integer(const JsonValue& object, const std::string& path, const char* name) {
    return static_cast<std::int64_t>(number(object, path, name));
  }

  bool flag(const JsonValue& object, const std::string& path, const char* name) {
    const JsonValue* value = member(object, path, name, JsonValue::Type::boolean);
    return value ? value->boolean : false;
  }

  std::vector<core::ProbeParam> params(const JsonValue& object, const std::string& path,
                                       const char* name) {
    std::vector<core::ProbeParam> out;
    const JsonValue* value = member(object, path, name, JsonValue::Type::object);
    if (value == nullptr) return out;
    for (const auto& [key, item] : value->object) {
      if (item.type == JsonValue::Type::string)
        out.push_back({key, item.string});
      else if (item.type == JsonValue::Type::number && item.integer)
        out.push_back({key, static_cast<std::int64_t>(item.number)});
      else if (item.type == JsonValue::Type::number)
        out.push_back({key, item.number});
      else {
        m_error = "field '" + path + name + "." + key + "' has the wrong type";
        break;
      }
    }
    return out;
  }

  core::ProbeRow row(const JsonValue& object, const std::string& path) {
    core::ProbeRow row;
    row.variant = text(object, path, "variant");
    row.params = params(object, path, "params");
    row.elements = integer(object, path, "elements");
    row.changed_frac = number(object, path, "changed_frac");
    row.max_abs = number(object, path, "max_abs");
    row.max_ulp = number(object, path, "max_ulp");
    if (const JsonValue* histogram =
            member(object, path, "ulp_histogram", JsonValue::Type::array)) {
      if (histogram->array.size() != row.ulp_histogram.size()) {
        m_error = "field '" + path + "ulp_histogram' must have 5 counts";
      } else {
        for (std::size_t i = 0; i < row.ulp_histogram.size(); ++i)
          row.ulp_histogram[i] = static_cast<std::int64_t>(histogram->array[i].number);
      }
    }
    const JsonValue* fp32 = object.find("fp32_changed_frac");
    if (fp32 == nullptr) {
      if (!failed()) m_error = "missing field '" + path + "fp32_changed_frac'";
    } else if (fp32->type == JsonValue::Type::number) {
      row.fp32_changed_frac = fp32->number;
    }
    if (const JsonValue* measures = member(object, path, "measures", JsonValue::Type::object))
      for (const auto& [key, item] : measures->object) row.measures.push_back({key, item.number});
    if (const JsonValue* digest = object.find("sha256")) {
      if (digest->type != JsonValue::Type::string)
        m_error = "field '" + path + "sha256' must be a string";
      else
        row.sha256 = digest->string;
    }
    return row;
  }

  core::ProbeExperiment experiment(const JsonValue& object, const std::string& path) {
    core::ProbeExperiment experiment;
    experiment.id = text(object, path, "id");
    experiment.title = text(object, path, "title");
    const std::string status = text(object, path, "status");
    if (status == "ok")
      experiment.status = core::ProbeStatus::ok;
    else if (status == "skipped")
      experiment.status = core::ProbeStatus::skipped;
    else
      experiment.status = core::ProbeStatus::failed;
    experiment.held = params(object, path, "held");
    if (const JsonValue* varied = member(object, path, "varied", JsonValue::Type::array))
      for (const auto& item : varied->array) experiment.varied.push_back(item.string);
    if (const JsonValue* rows = member(object, path, "rows", JsonValue::Type::array))
      for (std::size_t i = 0; i < rows->array.size() && !failed(); ++i)
        experiment.rows.push_back(row(rows->array[i], path + "rows[" + std::to_string(i) + "]."));
    if (const JsonValue* notes = member(object, path, "notes", JsonValue::Type::array))
      for (const auto& item : notes->array) experiment.notes.push_back(item.string);
    return experiment;
  }

private:
  std::string m_error;
};

} // namespace

std::string probe_result_to_json(const core::ProbeResult& result) {
  JsonWriter out;
  out.begin_object();
  out.key("schema");
  out.value(result.schema);
  out.key("backend");
  out.value(result.backend);
  out.key("backend_reason");
  out.value(result.backend_reason);
  out.key("dtype");
  out.value(result.dtype);
  out.key("quick");
  out.value(result.quick);
  out.key("device");
  out.begin_object();
  out.key("name");
  out.value(result.device.name);
  out.key("sm_count");
  out.value(result.device.sm_count);
  out.key("driver");
  out.value(result.device.driver);
  out.key("cuda");
  out.value(result.device.cuda);
  out.key("cublas");
  out.value(result.device.cublas);
  out.end_object();
  out.key("experiments");
  out.begin_array();
  for (const auto& experiment : result.experiments) write_experiment(out, experiment);
  out.end_array();
  out.key("recommendation");
  out.begin_object();
  out.key("any_flip");
  out.value(result.recommendation.any_flip);
  out.key("flip_gap");
  out.value(result.recommendation.flip_gap);
  out.key("default_tau");
  out.value(result.recommendation.default_tau);
  out.key("text");
  out.value(result.recommendation.text);
  out.end_object();
  out.end_object();
  return out.str() + "\n";
}

core::Result<core::ProbeResult> probe_result_from_json(const std::string& text) {
  JsonValue root;
  LLMREPRO_TRY_ASSIGN(root, parse_json(text));
  if (root.type != JsonValue::Type::object)
    return core::make_error(core::ErrorCode::input, "probe report: the document is not an object");
  Reader read;
  core::ProbeResult result;
  result.schema = read.text(root, "", "schema");
  if (!read.failed() && result.schema != core::k_probe_schema)
    return core::make_error(core::ErrorCode::input, "probe report: schema '" + result.schema +
                                                        "' is not " + core::k_probe_schema);
  result.backend = read.text(root, "", "backend");
  result.backend_reason = read.text(root, "", "backend_reason");
  result.dtype = read.text(root, "", "dtype");
  result.quick = read.flag(root, "", "quick");
  if (const JsonValue* device = read.member(root, "", "device", JsonValue::Type::object)) {
    result.device.name = read.text(*device, "device.", "name");
    result.device.sm_count = read.integer(*device, "device.", "sm_count");
    result.device.driver = read.text(*device, "device.", "driver");
    result.device.cuda = read.text(*device, "device.", "cuda");
    result.device.cublas = read.text(*device, "device.", "cublas");
  }
  if (const JsonValue* experiments = read.member(root, "", "experiments", JsonValue::Type::array))
    for (std::size_t i = 0; i < experiments->array.size() && !read.failed(); ++i)
      result.experiments.push_back(
          read.experiment(experiments->array[i], "experiments[" + std::to_string(i) + "]."));
  if (const JsonValue* advice = read.member(root, "", "recommendation", JsonValue::Type::object)) {
    result.recommendation.any_flip = read.flag(*advice, "recommendation.", "any_flip");
    result.recommendation.flip_gap = read.number(*advice, "recommendation.", "flip_gap");
    result.recommendation.default_tau = read.number(*advice, "recommendation.", "default_tau");
    result.recommendation.text = read.text(*advice, "recommendation.", "text");
  }
  if (read.failed())
    return core::make_error(core::ErrorCode::input, "probe report: " + read.error());
  return result;
}

} // namespace llmrepro::gpu
