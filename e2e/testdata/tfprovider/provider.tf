# The provider every case uses, as the provider's docs configure it; the test gives
# CF_API_URL, CF_USER and CF_PASSWORD of the local foundation.
terraform {
  required_providers {
    cloudfoundry = {
      source  = "cloudfoundry/cloudfoundry"
      version = "1.16.0"
    }
  }
}

provider "cloudfoundry" {}
